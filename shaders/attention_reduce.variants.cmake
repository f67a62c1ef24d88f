# attention_reduce, and attention_reduce_q8 / _f16 that also write the output as q8 blocks / f16
# rows.
vkllm_shader_variant(attention_reduce attention_reduce.comp)
vkllm_shader_variant(attention_reduce_q8 attention_reduce.comp Q8_OUT)
vkllm_shader_variant(attention_reduce_f16 attention_reduce.comp F16_OUT)
# The same with gpt-oss's attention sinks (attention_sinks.glsl) as the last binding.
vkllm_shader_variant(attention_reduce_sinks attention_reduce.comp SINKS=2)
vkllm_shader_variant(attention_reduce_q8_sinks attention_reduce.comp Q8_OUT SINKS=3)
vkllm_shader_variant(attention_reduce_f16_sinks attention_reduce.comp F16_OUT SINKS=3)
