# dequant_f16_<type>: weights decoded to f16 rows for matmul_cm2 (every type the tensor-core
# GEMMs take but f16 itself, which matmul_cm2 reads in place).
foreach(t Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 IQ4_NL Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_XS MXFP4)
  string(TOLOWER ${t} lt)
  vkllm_shader_variant(dequant_f16_${lt} dequant_f16.comp TYPE_${t})
endforeach()
