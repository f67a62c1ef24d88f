// The "<arch>.<key>" reader the ModelSpec readers share (model_spec.cpp and the per-family and
// per-feature spec files): typed lookups with defaults, and a clear error naming the full key
// when a required one is missing. Part of the model module's implementation.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "engine/gguf/gguf_file.h"

namespace vkllm::model::detail {

// Reads "<arch>.<key>" with a default, failing clearly when a required key is missing.
class Keys {
 public:
  Keys(const gguf::GgufFile& f, std::string arch) : f_(f), arch_(std::move(arch)) {}
  uint32_t u32(std::string_view key) const {
    auto v = f_.get_optional<uint32_t>(full(key));
    if (!v) throw std::runtime_error("model metadata is missing " + full(key));
    return *v;
  }
  uint32_t u32(std::string_view key, uint32_t fallback) const {
    return f_.get_optional<uint32_t>(full(key)).value_or(fallback);
  }
  float f32(std::string_view key, float fallback) const {
    return f_.get_optional<float>(full(key)).value_or(fallback);
  }
  std::string str(std::string_view key, std::string fallback) const {
    return f_.get_optional<std::string>(full(key)).value_or(std::move(fallback));
  }
  bool flag(std::string_view key, bool fallback) const {
    return f_.get_optional<bool>(full(key)).value_or(fallback);
  }
  std::optional<uint32_t> opt_u32(std::string_view key) const {
    return f_.get_optional<uint32_t>(full(key));
  }

 private:
  std::string full(std::string_view key) const { return arch_ + "." + std::string(key); }
  const gguf::GgufFile& f_;
  std::string arch_;
};

}  // namespace vkllm::model::detail
