// Test helper: writes GGUF bytes field by field, so tests can produce exactly the malformed
// files the reader must reject (the real writer refuses to).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace vkllm::gguf::testing {

class RawGguf {
 public:
  template <typename T>
  RawGguf& put(T v) {
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &v, sizeof(T));
    return *this;
  }
  RawGguf& str(std::string_view s) {
    put<uint64_t>(s.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    return *this;
  }
  RawGguf& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    bytes_.insert(bytes_.end(), {'G', 'G', 'U', 'F'});
    return put<uint32_t>(version).put<uint64_t>(n_tensors).put<uint64_t>(n_kv);
  }
  RawGguf& kv_u32(std::string_view key, uint32_t v) {
    return str(key).put<uint32_t>(4).put<uint32_t>(v);
  }
  RawGguf& kv_string(std::string_view key, std::string_view v) {
    return str(key).put<uint32_t>(8).str(v);
  }
  // type 0 is F32.
  RawGguf& tensor(std::string_view name, std::vector<uint64_t> shape, uint32_t type,
                  uint64_t offset) {
    str(name).put<uint32_t>(static_cast<uint32_t>(shape.size()));
    for (uint64_t d : shape) put<uint64_t>(d);
    return put<uint32_t>(type).put<uint64_t>(offset);
  }
  RawGguf& pad(uint64_t alignment = 32) {
    bytes_.resize((bytes_.size() + alignment - 1) / alignment * alignment, 0);
    return *this;
  }
  RawGguf& zeros(size_t n) {
    bytes_.resize(bytes_.size() + n, 0);
    return *this;
  }

  size_t size() const { return bytes_.size(); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace vkllm::gguf::testing
