# short_conv, and short_conv_q8 which also writes the output as q8 blocks for the int8-dot matvec.
vkllm_shader_variant(short_conv short_conv.comp)
vkllm_shader_variant(short_conv_q8 short_conv.comp Q8_OUT)
