# attention_reduce, and attention_reduce_q8 / _f16 that also write the output as q8 blocks / f16
# rows.
vkllm_shader_variant(attention_reduce attention_reduce.comp)
vkllm_shader_variant(attention_reduce_q8 attention_reduce.comp Q8_OUT)
vkllm_shader_variant(attention_reduce_f16 attention_reduce.comp F16_OUT)
