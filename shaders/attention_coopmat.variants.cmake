# attention_coopmat: prefill attention on tensor cores (GL_NV_cooperative_matrix); _q8 also writes
# its output as q8 blocks. Built without spirv-opt, like the tensor-core GEMM.
vkllm_shader_variant(attention_coopmat attention_coopmat.comp NO_OPT)
vkllm_shader_variant(attention_coopmat_q8 attention_coopmat.comp Q8_OUT NO_OPT)
vkllm_shader_variant(attention_coopmat_sinks attention_coopmat.comp SINKS=5 NO_OPT)
vkllm_shader_variant(attention_coopmat_q8_sinks attention_coopmat.comp Q8_OUT SINKS=6 NO_OPT)
