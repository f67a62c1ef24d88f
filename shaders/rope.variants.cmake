# rope (f32 -> f32), rope_kv (rotate K into the paged f16 cache), kv_copy (V into the cache).
vkllm_shader_variant(rope rope.comp)
vkllm_shader_variant(rope_kv rope.comp PAGED)
vkllm_shader_variant(kv_copy rope.comp PAGED NO_ROPE)
