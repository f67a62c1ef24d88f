# rms_norm (subgroup reduction) and rms_norm_shmem (devices without subgroup arithmetic).
vkllm_shader_variant(rms_norm rms_norm.comp)
vkllm_shader_variant(rms_norm_shmem rms_norm.comp REDUCE_SHARED)
# rms_norm_q8: also writes the output as q8 blocks for the int8-dot matvec (subgroup devices).
vkllm_shader_variant(rms_norm_q8 rms_norm.comp Q8_OUT)
