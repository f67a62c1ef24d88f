# row_stats (subgroup reduction) and row_stats_shmem (devices without subgroup arithmetic).
vkllm_shader_variant(row_stats row_stats.comp)
vkllm_shader_variant(row_stats_shmem row_stats.comp REDUCE_SHARED)
