// Internal: GgufFile's state, shared by the parser (gguf_file.cpp) and the in-memory edits that
// load-time layout translations make to the view (gguf_view_edit.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_mapped_file.h"

namespace vkllm::gguf {

namespace detail {
class Cursor;
}  // namespace detail

constexpr uint64_t kDefaultAlignment = 32;

struct GgufFile::Impl {
  std::optional<MappedFile> mapping;
  std::vector<uint8_t> owned;  // parse_header's copy of the prefix
  std::span<const uint8_t> bytes;
  uint64_t file_size = 0;  // the whole file's size (bytes.size() unless header-only)
  uint32_t version = 0;
  uint64_t alignment = kDefaultAlignment;
  uint64_t data_offset = 0;
  std::map<std::string, Value, std::less<>> metadata;
  std::vector<const std::string*> key_order;  // map keys in file order (map nodes are stable)
  std::vector<TensorInfo> tensors;
  std::unordered_map<std::string_view, size_t> tensor_index;  // views into tensors[i].name
  LayoutTranslation translation;  // what a load-time translation changed in this view

  void reindex_tensors();

  void parse();
  void parse_tensor_infos(detail::Cursor& c, uint64_t count);
  void validate_tensor_layout(const detail::Cursor& c, const std::vector<uint64_t>& info_offsets);
};

}  // namespace vkllm::gguf
