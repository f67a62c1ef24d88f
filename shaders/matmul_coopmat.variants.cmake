# matmul_coopmat_<type>: the tensor-core prefill GEMM (GL_NV_cooperative_matrix, f16 x f16 -> f32)
# for the weight types whose values f16 holds; F32 and BF16 weights stay on matmul.comp.
# Built without spirv-opt, which has miscompiled cooperative-matrix shaders upstream.
foreach(t F16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 IQ4_NL Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_XS MXFP4)
  string(TOLOWER ${t} lt)
  vkllm_shader_variant(matmul_coopmat_${lt} matmul_coopmat.comp TYPE_${t} NO_OPT)
endforeach()
# matmul_coopmat_moe_<type>: the same over the pairs of each expert (grouped MoE products,
# moe_gemm_rows.glsl).
foreach(t F16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 IQ4_NL Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_XS MXFP4)
  string(TOLOWER ${t} lt)
  vkllm_shader_variant(matmul_coopmat_moe_${lt} matmul_coopmat.comp TYPE_${t} MOE NO_OPT)
endforeach()
