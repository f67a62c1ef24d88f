# glu, and glu_q8 which also writes its output as q8 blocks for the int8-dot matvec.
vkllm_shader_variant(glu glu.comp)
vkllm_shader_variant(glu_q8 glu.comp Q8_OUT)
