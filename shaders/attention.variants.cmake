# attention, and attention_q8 that also writes its unsplit output as q8 blocks (Q8_OUT).
vkllm_shader_variant(attention attention.comp)
vkllm_shader_variant(attention_q8 attention.comp Q8_OUT)
