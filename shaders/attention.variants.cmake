# attention, and attention_q8 / attention_f16 that also write their unsplit output as q8 blocks
# (Q8_OUT) / f16 rows (F16_OUT).
vkllm_shader_variant(attention attention.comp)
vkllm_shader_variant(attention_q8 attention.comp Q8_OUT)
vkllm_shader_variant(attention_f16 attention.comp F16_OUT)
