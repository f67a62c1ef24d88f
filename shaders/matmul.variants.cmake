# matmul_<type>: the portable shared-memory tiled prefill GEMM, one per weight type; see
# matmul.comp and dequant_weights.glsl.
foreach(t F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 IQ4_NL Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_XS MXFP4)
  string(TOLOWER ${t} lt)
  vkllm_shader_variant(matmul_${lt} matmul.comp TYPE_${t})
endforeach()
# matmul_moe_<type>: the same over the pairs of each expert (grouped MoE products,
# moe_gemm_rows.glsl).
foreach(t F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 IQ4_NL Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_XS MXFP4)
  string(TOLOWER ${t} lt)
  vkllm_shader_variant(matmul_moe_${lt} matmul.comp TYPE_${t} MOE)
endforeach()
