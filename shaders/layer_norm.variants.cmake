# layer_norm (subgroup reduction) and layer_norm_shmem (devices without subgroup arithmetic).
vkllm_shader_variant(layer_norm layer_norm.comp)
vkllm_shader_variant(layer_norm_shmem layer_norm.comp REDUCE_SHARED)
