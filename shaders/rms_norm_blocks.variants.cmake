# rms_norm_blocks: one 32-element block per invocation, in registers (rows of up to 32 x the
# workgroup size); _shmem for devices without subgroup arithmetic; _q8 also writes q8 blocks, _f16
# f16 rows for the tensor-core GEMM.
vkllm_shader_variant(rms_norm_blocks rms_norm_blocks.comp)
vkllm_shader_variant(rms_norm_blocks_shmem rms_norm_blocks.comp REDUCE_SHARED)
vkllm_shader_variant(rms_norm_blocks_q8 rms_norm_blocks.comp Q8_OUT)
vkllm_shader_variant(rms_norm_blocks_f16 rms_norm_blocks.comp F16_OUT)
# _chain: a post-norm's residual add then the next norm (CHAIN), with its q8 or f16 copy.
vkllm_shader_variant(rms_norm_blocks_chain rms_norm_blocks.comp CHAIN)
vkllm_shader_variant(rms_norm_blocks_chain_q8 rms_norm_blocks.comp CHAIN Q8_OUT)
vkllm_shader_variant(rms_norm_blocks_chain_f16 rms_norm_blocks.comp CHAIN F16_OUT)
