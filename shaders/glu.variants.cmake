# glu, and glu_q8 / glu_f16 which also write the output as q8 blocks for the int8-dot matvec / as
# f16 rows for the tensor-core GEMM.
vkllm_shader_variant(glu glu.comp)
vkllm_shader_variant(glu_q8 glu.comp Q8_OUT)
vkllm_shader_variant(glu_f16 glu.comp F16_OUT)
