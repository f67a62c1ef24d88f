// Builds a GGUF v3 file: metadata in insertion order, then tensor infos and aligned data, in the
// layout llama.cpp and Ollama read. Used by `vkllm dev make-model` and by tests that need
// hand-made (also deliberately corrupt) files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/gguf_file.h"

namespace vkllm::gguf {

class GgufWriter {
 public:
  // Any metadata value (scalars, strings, nested arrays) as the reader represents it.
  void set(std::string key, Value value);
  void set_u32(std::string key, uint32_t v);
  void set_i32(std::string key, int32_t v);
  void set_u64(std::string key, uint64_t v);
  void set_f32(std::string key, float v);
  void set_bool(std::string key, bool v);
  void set_string(std::string key, std::string v);
  void set_strings(std::string key, const std::vector<std::string>& v);
  void set_f32s(std::string key, const std::vector<float>& v);
  void set_i32s(std::string key, const std::vector<int32_t>& v);
  // Copies every metadata key of `src` whose name starts with `prefix` (e.g. "tokenizer.").
  void copy_metadata(const GgufFile& src, std::string_view prefix);

  // shape in ggml order (shape[0] contiguous). data must hold exactly the tensor's byte size.
  void add_tensor(std::string name, TensorType type, std::vector<uint64_t> shape,
                  std::vector<uint8_t> data);

  uint64_t alignment() const { return alignment_; }
  void set_alignment(uint64_t a);  // also writes general.alignment

  // The whole file image; write() puts it on disk via a temp file and rename.
  std::vector<uint8_t> serialize() const;
  void write(const std::filesystem::path& path) const;

 private:
  struct PendingTensor {
    std::string name;
    TensorType type;
    std::vector<uint64_t> shape;
    std::vector<uint8_t> data;
  };
  std::vector<std::pair<std::string, Value>> metadata_;
  std::vector<PendingTensor> tensors_;
  uint64_t alignment_ = 32;
};

}  // namespace vkllm::gguf
