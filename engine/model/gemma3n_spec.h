// Gemma 3n's text decoder settings (llama.cpp's gemma3n), read on top of what every
// architecture reads (ModelSpec::from_gguf).
#pragma once

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"

namespace vkllm::model {

// Gemma 3's layer (Q/K norms, post norms, GELU gates, NeoX RoPE, embeddings scaled by
// sqrt(n_embd)) with an unscaled QK^T (the Q/K norms set the scale), an RMS-normed V, local
// layers by attention.sliding_window_pattern (per-layer booleans, or a period: default 5) with
// their own RoPE base, final logits soft-capped at 30, and AltUp, LAuReL, per-layer inputs,
// activation sparsity and KV sharing with the sizes llama.cpp fixes for the architecture (4
// streams of which the first is active, per-layer inputs 256 wide, rank 64, 10 sparse layers,
// caches for the first 20 layers). Checks that every tensor it needs has those sizes.
void read_gemma3n(const gguf::GgufFile& f, ModelSpec& s);

}  // namespace vkllm::model
