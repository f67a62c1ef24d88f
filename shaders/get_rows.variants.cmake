# get_rows_<type>: embedding lookup for each weight type dequant_weights.glsl decodes.
foreach(t F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 IQ4_NL Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_XS MXFP4)
  string(TOLOWER ${t} lt)
  vkllm_shader_variant(get_rows_${lt} get_rows.comp TYPE_${t})
endforeach()
