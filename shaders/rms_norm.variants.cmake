# rms_norm (subgroup reduction) and rms_norm_shmem (devices without subgroup arithmetic).
vkllm_shader_variant(rms_norm rms_norm.comp)
vkllm_shader_variant(rms_norm_shmem rms_norm.comp REDUCE_SHARED)
