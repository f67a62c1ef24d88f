# matmul_cm2: the workgroup-scope tensor-core GEMM (VK_NV_cooperative_matrix2), f16 weights only
# (other types are decoded to f16 rows first by dequant_f16_<type>).
vkllm_shader_variant(matmul_cm2 matmul_cm2.comp KHR_COOPMAT)
# matmul_cm2_moe: the same over one expert's pairs a workgroup (MOE), for grouped expert products.
vkllm_shader_variant(matmul_cm2_moe matmul_cm2.comp KHR_COOPMAT MOE)
