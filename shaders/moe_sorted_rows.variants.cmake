# moe_sorted_rows_gather / _scatter: rows into and out of expert order around the MoE
# workgroup-scope GEMM (moe_sorted_rows.comp).
vkllm_shader_variant(moe_sorted_rows_gather moe_sorted_rows.comp GATHER)
vkllm_shader_variant(moe_sorted_rows_scatter moe_sorted_rows.comp SCATTER)
