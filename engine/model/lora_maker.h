// Random LoRA adapters for a base model, in llama.cpp's GGUF adapter format (lora_adapter.h):
// test fixtures (`vkllm dev make-lora`) that llama.cpp's --lora loads unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"

namespace vkllm::model {

struct MakeLoraOptions {
  uint32_t rank = 8;
  float alpha = 16.0f;  // scale = alpha / rank
  // Which per-layer weights get a pair, by the part of the name between "blk.N." and ".weight".
  std::vector<std::string> targets{"attn_q",   "attn_k", "attn_v",  "attn_output",
                                   "ffn_gate", "ffn_up", "ffn_down"};
  gguf::TensorType type = gguf::TensorType::F16;  // of lora_a and lora_b: F32, F16 or BF16
  uint64_t seed = 0;
  // How large the update is against the base weights (whose entries have a standard deviation
  // of 1/sqrt(n_in)): scale * B A gets entries of strength / sqrt(n_in).
  float strength = 0.5f;
};

// Declares the adapter's metadata and tensors for `base` (a header suffices) in `writer`; the
// same options and base give the same bytes. Throws std::invalid_argument when a target matches
// no 2-D weight of the base or the options are out of range.
void build_random_lora(const MakeLoraOptions& options, const gguf::GgufFile& base,
                       gguf::GgufWriter& writer);

}  // namespace vkllm::model
