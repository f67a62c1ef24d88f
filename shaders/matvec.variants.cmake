# matvec_<type> (subgroup reduction) and matvec_<type>_shmem (shared-memory reduction, for devices
# without subgroup arithmetic), one per weight type; see matvec.comp and dequant_weights.glsl;
# matvec_<type>_rope_kv: the first with RoPE and the KV-cache write fused in (ROPE_KV_EPILOGUE).
# matvec_<type>_q8: the int8-dot kernels on q8 activations, for the types dequant_int8.glsl
# decodes (chosen only on devices with shaderIntegerDotProduct and subgroup arithmetic);
# matvec_<type>_q8_rope_kv: the Q|K|V product with RoPE and the KV-cache write fused in (see
# ROPE_KV_EPILOGUE); matvec_<type>_q8_moe: the indirect expert products on q8 activations.
# matvec_<type>_moe / _moe_shmem: the indirect products over a router's selected experts (MOE_IDS);
# matvec_<type>_moeg / _moeg_shmem: the same over pairs grouped by expert (MOE_GROUPS).
foreach(t F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 IQ4_NL Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_XS MXFP4)
  string(TOLOWER ${t} lt)
  vkllm_shader_variant(matvec_${lt} matvec.comp TYPE_${t})
  vkllm_shader_variant(matvec_${lt}_shmem matvec.comp TYPE_${t} REDUCE_SHARED)
  vkllm_shader_variant(matvec_${lt}_rope_kv matvec.comp TYPE_${t} ROPE_KV_EPILOGUE)
  vkllm_shader_variant(matvec_${lt}_moe matvec.comp TYPE_${t} MOE_IDS)
  vkllm_shader_variant(matvec_${lt}_moe_shmem matvec.comp TYPE_${t} MOE_IDS REDUCE_SHARED)
  vkllm_shader_variant(matvec_${lt}_moeg matvec.comp TYPE_${t} MOE_IDS MOE_GROUPS)
  vkllm_shader_variant(matvec_${lt}_moeg_shmem matvec.comp TYPE_${t} MOE_IDS MOE_GROUPS REDUCE_SHARED)
endforeach()
# matvec_<type>_norm_in / _rope_kv_norm_in: float weights reading x through its RMSNorm (NORM_IN).
foreach(t F32 F16 BF16)
  string(TOLOWER ${t} lt)
  vkllm_shader_variant(matvec_${lt}_norm_in matvec.comp TYPE_${t} NORM_IN)
  vkllm_shader_variant(matvec_${lt}_rope_kv_norm_in matvec.comp TYPE_${t} ROPE_KV_EPILOGUE NORM_IN)
endforeach()
# matvec_f16w*: F16 rows of a multiple of 8 read 16 bytes a load (F16_WIDE in dequant_weights.glsl),
# subgroup-reduction variants only.
vkllm_shader_variant(matvec_f16w matvec.comp TYPE_F16 F16_WIDE)
vkllm_shader_variant(matvec_f16w_norm_in matvec.comp TYPE_F16 F16_WIDE NORM_IN)
vkllm_shader_variant(matvec_f16w_rope_kv matvec.comp TYPE_F16 F16_WIDE ROPE_KV_EPILOGUE)
vkllm_shader_variant(matvec_f16w_rope_kv_norm_in matvec.comp TYPE_F16 F16_WIDE ROPE_KV_EPILOGUE NORM_IN)
foreach(t Q4_0 Q8_0 Q4_K Q5_K Q6_K)
  string(TOLOWER ${t} lt)
  vkllm_shader_variant(matvec_${lt}_q8 matvec.comp TYPE_${t} INT_DOT)
  vkllm_shader_variant(matvec_${lt}_q8_rope_kv matvec.comp TYPE_${t} INT_DOT ROPE_KV_EPILOGUE)
  vkllm_shader_variant(matvec_${lt}_q8_moe matvec.comp TYPE_${t} INT_DOT MOE_IDS)
endforeach()
