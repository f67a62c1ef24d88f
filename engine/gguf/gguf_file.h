// Read-only view of a GGUF (v2/v3) file: metadata, tensor table and tensor data, memory-mapped.
// Opening validates the whole file structure; any inconsistency throws GgufError naming the
// field and byte offset, so later accessors never see a malformed file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/gguf/tensor_type.h"

namespace vkllm::gguf {

// "GGUF" read as a little-endian u32: a file's first four bytes.
inline constexpr uint32_t kGgufMagic = 0x46554747;

class GgufError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// GGUF metadata value type ids (on-disk values).
enum class ValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};

// "u8", "string", "array", ...; "type N" for ids outside the enum.
std::string value_type_name(ValueType type);

struct Value;
struct Array {
  ValueType element_type;
  std::vector<Value> items;
};

// One metadata value. Arrays may nest (arrays of arrays).
struct Value {
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                               std::string, std::shared_ptr<Array>, uint64_t, int64_t, double>;
  Storage v;
  ValueType type() const;
};

struct TensorInfo {
  std::string name;
  TensorType type;
  std::vector<uint64_t> shape;  // ggml order: shape[0] is the contiguous (row) dimension
  uint64_t offset;              // relative to the data section
  uint64_t byte_size;
  // A strided view (split_stacked_experts): the tensor's shape[2] experts lie `expert_stride`
  // bytes apart in the file, expert e's byte_size / shape[2] bytes at offset + expert_skip +
  // e * expert_stride. 0: the bytes are contiguous from `offset`. The gate and up halves of a
  // stacked ffn_gate_up_exps are two such views of one file extent (same offset and stride).
  uint64_t expert_stride = 0;
  uint64_t expert_skip = 0;
  uint64_t element_count() const;
  bool strided() const { return expert_stride != 0; }
  // One expert's bytes (strided views only).
  uint64_t expert_bytes() const { return byte_size / shape[2]; }
  // The bytes of the file the tensor lies in, from `offset` (the whole stacked tensor for a view).
  uint64_t extent() const { return strided() ? expert_stride * shape[2] : byte_size; }
};

// What a load-time layout translation (engine/gguf/ollama_layout.h) did to a file's view: the
// layout it recognised ("ollama-gemma3", ...; empty: none, the view is the file as stored) and
// one line per change, for `vkllm gguf-info` and logs.
struct LayoutTranslation {
  std::string name;
  std::vector<std::string> changes;
  bool applied() const { return !name.empty(); }
};

// Translated: files written by another converter whose layout a translation recognises are seen
// in llama.cpp's layout (the file itself is never changed); Raw: the file exactly as stored.
enum class ReadLayout { Translated, Raw };

class GgufFile {
 public:
  // Maps and validates the file. Throws GgufError; LayoutError (ollama_layout.h) when the file
  // half-matches a known converter's layout.
  static GgufFile open(const std::filesystem::path& path,
                       ReadLayout layout = ReadLayout::Translated);
  // Parses an in-memory image (used by the fuzzer and tests); the bytes must outlive the object.
  static GgufFile parse(std::span<const uint8_t> bytes, ReadLayout layout = ReadLayout::Translated);
  // Parses only the header (metadata and tensor table) from the first bytes of a file of
  // `file_size` bytes, copying what it needs, so a model can be read from a compressed blob
  // without an uncompressed copy. Tensor extents are checked against file_size; tensor_data()
  // and bytes() are not available. Throws GgufError, also when `prefix` ends inside the header
  // (header_truncated() then tells the caller to retry with more bytes).
  static GgufFile parse_header(std::span<const uint8_t> prefix, uint64_t file_size,
                               ReadLayout layout = ReadLayout::Translated);
  bool header_only() const;

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  ~GgufFile();

  uint32_t version() const;
  uint64_t alignment() const;    // general.alignment, default 32
  uint64_t data_offset() const;  // absolute file offset of the tensor data section

  bool has(std::string_view key) const;
  const Value* find(std::string_view key) const;  // nullptr if absent
  const std::map<std::string, Value, std::less<>>& metadata() const;
  std::vector<std::string_view> metadata_keys() const;  // in file order
  // Typed access; throws GgufError if the key is missing or of another type. Integer
  // requests accept any integer type whose value fits; float/double accept f32 and f64.
  // Instantiated for bool, (u)int8..64_t, float, double and std::string.
  template <typename T>
  T get(std::string_view key) const;
  template <typename T>
  std::optional<T> get_optional(std::string_view key) const;
  // Arrays of scalars or strings: get_array<std::string>("tokenizer.ggml.tokens").
  template <typename T>
  std::vector<T> get_array(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const;
  const TensorInfo* find_tensor(std::string_view name) const;
  // A contiguous tensor's bytes; GgufError for a strided view (read extent() from offset).
  std::span<const uint8_t> tensor_data(const TensorInfo& t) const;
  // The bytes of [offset, offset + t.extent()): a strided view's whole stacked tensor.
  std::span<const uint8_t> tensor_extent(const TensorInfo& t) const;
  std::span<const uint8_t> bytes() const;  // the whole file image
  // Whether bytes() is a mapping of a file (open()) rather than memory the caller owns
  // (parse()): only a file mapping may have its pages dropped and faulted back in.
  bool file_mapped() const;

  // What the load-time translation changed (nothing for a Raw read or an unrecognised file).
  const LayoutTranslation& translation() const;

  // Edits of this in-memory view, for load-time layout translations only: the file is never
  // written. Renamed and hidden tensors keep their data where the file has it.
  void set_value(std::string key, Value value);  // adds (at the end of the key order) or replaces
  void erase_key(std::string_view key);
  void rename_tensor(std::string_view from, std::string to);  // throws GgufError on a clash
  void hide_tensor(std::string_view name);
  // Replaces tensor `name` by `views` (in its place in the table), strided views of its bytes.
  void replace_tensor(std::string_view name, std::vector<TensorInfo> views);
  LayoutTranslation& mutable_translation();

 private:
  struct Impl;
  explicit GgufFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkllm::gguf
