// Builds a GGUF v3 file: metadata in insertion order, then tensor infos and aligned data, in the
// layout llama.cpp and Ollama read. Used by `vkllm dev make-model` and by tests that need
// hand-made (also deliberately corrupt) files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
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
  // The value set under `key` (nullptr if none); erase() drops a key, if set.
  const Value* find(std::string_view key) const;
  void erase(std::string_view key);
  std::vector<std::string> keys() const;  // in insertion order

  // shape in ggml order (shape[0] contiguous). data must hold exactly the tensor's byte size.
  void add_tensor(std::string name, TensorType type, std::vector<uint64_t> shape,
                  std::vector<uint8_t> data);

  // Like add_tensor, but the bytes come from `fill` only when serialize() or write() reaches the
  // tensor (into a buffer of exactly the tensor's byte size), so a large model is produced one
  // tensor at a time instead of being held in memory whole.
  using TensorFiller = std::function<void(std::span<uint8_t> out)>;
  void add_lazy_tensor(std::string name, TensorType type, std::vector<uint64_t> shape,
                       TensorFiller fill);
  // Renames a tensor already added, keeping its place and bytes (std::invalid_argument if there
  // is no tensor `from` or one named `to` exists).
  void rename_tensor(std::string_view from, std::string to);
  bool has_tensor(std::string_view name) const;
  // Replaces the 3-D tensors `first` and `second` (one type, row width and last dimension) by
  // one tensor `name` in first's place, each slice of the last dimension holding first's rows of
  // that slice, then second's: llama.cpp's stacked experts (ffn_gate_up_exps from ffn_gate_exps
  // and ffn_up_exps). Lazy: filled when written. std::invalid_argument if they do not fit.
  void stack_tensors(std::string_view first, std::string_view second, std::string name);
  // A tensor added so far, its bytes filled now if it is lazy (nullopt if there is none): what a
  // companion file made from this one reads (the fixture projector's [IMG_BREAK] embedding row).
  struct TensorCopy {
    TensorType type;
    std::vector<uint64_t> shape;
    std::vector<uint8_t> data;
  };
  std::optional<TensorCopy> copy_tensor(std::string_view name) const;

  uint64_t alignment() const { return alignment_; }
  void set_alignment(uint64_t a);  // also writes general.alignment

  // The whole file image; write() puts it on disk via a temp file and rename.
  std::vector<uint8_t> serialize() const;
  // Only the header (metadata and tensor table, padded to the data section), and the size the
  // whole file would have: what GgufFile::parse_header needs to describe a file never written
  // (a model whose tensor data another TensorDataSource produces). Fills nothing.
  std::vector<uint8_t> serialize_header() const;
  uint64_t file_size() const;
  void write(const std::filesystem::path& path) const;
  // The file image in pieces (header, then each tensor's data and padding), one tensor in memory
  // at a time, for a destination that is not a plain file (a blob store's writer).
  using BytesOut = std::function<void(std::span<const uint8_t> bytes)>;
  void write_to(const BytesOut& sink) const;

 private:
  struct PendingTensor {
    std::string name;
    TensorType type;
    std::vector<uint64_t> shape;
    std::vector<uint8_t> data;
    uint64_t byte_size = 0;
    TensorFiller fill;  // set for lazy tensors, whose `data` stays empty
  };
  void add_pending(PendingTensor t);
  static std::vector<uint8_t> materialize(const PendingTensor& t);
  std::vector<std::pair<std::string, Value>> metadata_;
  std::vector<PendingTensor> tensors_;
  uint64_t alignment_ = 32;
};

}  // namespace vkllm::gguf
