# attention_reduce, and attention_reduce_q8 that also writes the output as q8 blocks.
vkllm_shader_variant(attention_reduce attention_reduce.comp)
vkllm_shader_variant(attention_reduce_q8 attention_reduce.comp Q8_OUT)
