// Qwen3.5's dense text decoder (llama.cpp's qwen35), read on top of what every architecture
// reads (ModelSpec::from_gguf).
#pragma once

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"

namespace vkllm::model {

// Gated DeltaNet linear-attention layers (ssm.* keys: conv kernel, state size = head size, group
// count = query/key heads, time-step rank = value heads) interleaved with gated full-attention
// layers: recurrent layers from attention.recurrent_layers, else every layer but each
// full_attention_interval-th (default 4), as llama.cpp decides them. Attention layers have Q/K
// norms, an output gate interleaved with Q in attn_q, and NeoX RoPE over rope.dimension_count
// dimensions (its multi-section RoPE with one position per text token); the FFN's norm is
// post_attention_norm. Checks every tensor it needs and refuses layouts it cannot run.
void read_qwen35(const gguf::GgufFile& f, ModelSpec& s);

}  // namespace vkllm::model
