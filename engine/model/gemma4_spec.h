// Gemma 4's text decoder settings (llama.cpp's gemma4), read on top of what every architecture
// reads (ModelSpec::from_gguf).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"

namespace vkllm::model {

// Gemma 3's layer (Q/K norms, post norms, GELU gates, NeoX RoPE, embeddings scaled by
// sqrt(n_embd)) with an unscaled QK^T, an RMS-normed V (K's raw projection where a layer has no
// attn_v), local layers by the per-layer attention.sliding_window_pattern, global layers with
// their own head size (key_length; local: key_length_swa), K/V head count (a per-layer
// head_count_kv), rotated dimensions (rope.dimension_count; local: _swa) and RoPE base (local:
// rope.freq_base_swa), the rope_freqs factors on global layers only, per-layer FFN widths,
// optional per-layer inputs (embedding_length_per_layer_input wide) and layer output scales,
// KV sharing of the last attention.shared_kv_layers layers, final logits soft-capped
// (final_logit_softcapping, default 30). `kv_heads` is head_count_kv per layer. Checks that
// every tensor it needs has the size the metadata gives.
void read_gemma4(const gguf::GgufFile& f, const std::vector<uint32_t>& kv_heads, ModelSpec& s);

}  // namespace vkllm::model
