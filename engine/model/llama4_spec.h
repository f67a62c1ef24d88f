// Llama 4's text decoder settings (llama.cpp's llama4), read on top of what every architecture
// reads (ModelSpec::from_gguf); its MoE FFN is then read as every MoE model's.
#pragma once

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"

namespace vkllm::model {

// iRoPE as llama.cpp runs it: every 4th layer ((l + 1) % 4 == 0) is a global NoPE layer whose
// queries get the attention temperature (1 + 0.1 ln(floor((p + 1) / 8192) + 1)); the others
// rotate Q and K (base rope.freq_base_swa, default rope.freq_base), RMS-norm them per head
// without a weight (except the 128-expert Maverick) and attend in chunks of
// attention.chunk_size positions (Ollama's key; default 8192, the size llama.cpp always uses).
// A file whose attention.sliding_window is 0 has neither chunks nor the pattern (llama.cpp:
// only its last layer skips RoPE). The FFN: interleave_moe_layer_step's every k-th layer
// ((l + 1) % k == 0) is MoE, routed by the sigmoid of the top expert_used_count logits applied
// to the experts' input, beside an ungated shared expert (read_moe reads it), the others dense
// (feed_forward_length). Throws std::runtime_error naming a missing key.
void read_llama4(const gguf::GgufFile& f, ModelSpec& s);

}  // namespace vkllm::model
