# attention, and attention_q8 / attention_f16 that also write their unsplit output as q8 blocks
# (Q8_OUT) / f16 rows (F16_OUT).
vkllm_shader_variant(attention attention.comp)
vkllm_shader_variant(attention_q8 attention.comp Q8_OUT)
vkllm_shader_variant(attention_f16 attention.comp F16_OUT)
# attention_decode (one query token per sequence: a chunk of positions per round trip), with the
# same q8 / f16 output variants.
vkllm_shader_variant(attention_decode attention_decode.comp)
vkllm_shader_variant(attention_decode_q8 attention_decode.comp Q8_OUT)
vkllm_shader_variant(attention_decode_f16 attention_decode.comp F16_OUT)
# The same with gpt-oss's attention sinks (attention_sinks.glsl): one more binding, the sinks.
vkllm_shader_variant(attention_sinks attention.comp SINKS=5)
vkllm_shader_variant(attention_q8_sinks attention.comp Q8_OUT SINKS=6)
vkllm_shader_variant(attention_f16_sinks attention.comp F16_OUT SINKS=6)
vkllm_shader_variant(attention_decode_sinks attention_decode.comp SINKS=5)
vkllm_shader_variant(attention_decode_q8_sinks attention_decode.comp Q8_OUT SINKS=6)
vkllm_shader_variant(attention_decode_f16_sinks attention_decode.comp F16_OUT SINKS=6)
# q8_0 caches scored with int8 dot products (K_INT8; devices with shaderIntegerDotProduct), with
# the same output variants (no sinks: gpt-oss's q8_0 caches keep the variants above).
vkllm_shader_variant(attention_kq8 attention.comp K_INT8)
vkllm_shader_variant(attention_kq8_q8 attention.comp K_INT8 Q8_OUT)
vkllm_shader_variant(attention_kq8_f16 attention.comp K_INT8 F16_OUT)
