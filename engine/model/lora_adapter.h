// A LoRA adapter in llama.cpp's GGUF format (convert_lora_to_gguf.py): general.type "adapter",
// adapter.type "lora", adapter.lora.alpha, and for each adapted weight W (n_out rows of n_in) of
// the base model the pair "<W's name>.lora_a" (r rows of n_in) and "<W's name>.lora_b" (n_out rows
// of r). The adapted weight is W + scale * B A with scale = user_scale * alpha / r (user_scale
// alone when alpha is 0), as llama.cpp applies it. The token embedding's pair is stored the other
// way round (A: n_vocab rows of r, B: n_embd rows of r), again as llama.cpp reads it.
//
// Checking an adapter against a base model needs only the base's header, so a server can refuse a
// mismatched adapter at create time; merging (merge_rows) runs as the base's tensors load.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/gguf_file.h"

namespace vkllm::model {

// An adapter that is malformed or does not fit the base model; the message says which tensor or
// key and why, for a user to read.
class LoraError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class LoraAdapter {
 public:
  // Reads an adapter GGUF from a file or from its bytes, and checks that it is one (general.type,
  // adapter.type, complete lora_a/lora_b pairs of consistent rank, float or dequantizable types).
  // Throws LoraError, or gguf::GgufError for a file that is no GGUF at all.
  static LoraAdapter open(const std::filesystem::path& path, float user_scale = 1.0f);
  static LoraAdapter from_bytes(std::vector<uint8_t> bytes, float user_scale = 1.0f);

  LoraAdapter(LoraAdapter&&) noexcept;
  LoraAdapter& operator=(LoraAdapter&&) noexcept;
  ~LoraAdapter();

  // Throws LoraError unless every pair adapts a 2-D weight of `base` (a header is enough) with
  // matching shapes, and the architectures agree.
  void check_base(const gguf::GgufFile& base) const;

  const std::string& architecture() const;  // general.architecture
  float alpha() const;                      // adapter.lora.alpha (0 when absent)
  size_t size() const;                      // adapted weights
  // Whether `tensor_name` (e.g. "blk.0.attn_q.weight") is adapted, and with which scale.
  bool adapts(std::string_view tensor_name) const;
  float scale(std::string_view tensor_name) const;
  uint32_t rank(std::string_view tensor_name) const;
  std::vector<std::string> adapted_names() const;

  // Adds scale * (B A) to rows [first_row, first_row + rows.size() / n_in) of the adapted weight
  // `tensor_name`, given as floats (n_in per row).
  void add_delta(std::string_view tensor_name, uint64_t first_row, std::span<float> rows) const;

 private:
  struct Impl;
  explicit LoraAdapter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkllm::model
