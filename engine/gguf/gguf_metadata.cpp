// GgufFile's typed metadata getters: get<T>, get_optional<T>, get_array<T> for every type GGUF
// stores, explicitly instantiated here so callers see only their declarations.
#include <string>
#include <variant>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_value_convert.h"

namespace vkllm::gguf {

using detail::convert;
using detail::requested_name;
using detail::type_of;

ValueType Value::type() const {
  return static_cast<ValueType>(v.index());
}

template <typename T>
std::optional<T> GgufFile::get_optional(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  std::string why;
  auto out = convert<T>(*v, why);
  if (!out) throw GgufError("GGUF: metadata key '" + std::string(key) + "' " + why);
  return out;
}

template <typename T>
T GgufFile::get(std::string_view key) const {
  if (!find(key)) throw GgufError("GGUF: metadata key '" + std::string(key) + "' is missing");
  return *get_optional<T>(key);
}

template <typename T>
std::vector<T> GgufFile::get_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v) throw GgufError("GGUF: metadata key '" + std::string(key) + "' is missing");
  auto* arr = std::get_if<std::shared_ptr<Array>>(&v->v);
  if (!arr) {
    throw GgufError("GGUF: metadata key '" + std::string(key) + "' is " + type_of(*v) +
                    ", not an array of " + requested_name<T>());
  }
  std::vector<T> out;
  out.reserve((*arr)->items.size());
  std::string why;
  for (size_t i = 0; i < (*arr)->items.size(); ++i) {
    auto x = convert<T>((*arr)->items[i], why);
    if (!x) {
      throw GgufError("GGUF: metadata key '" + std::string(key) + "' item " + std::to_string(i) +
                      " " + why);
    }
    out.push_back(std::move(*x));
  }
  return out;
}

#define VKLLM_GGUF_INSTANTIATE(T)                                              \
  template T GgufFile::get<T>(std::string_view) const;                         \
  template std::optional<T> GgufFile::get_optional<T>(std::string_view) const; \
  template std::vector<T> GgufFile::get_array<T>(std::string_view) const;
VKLLM_GGUF_INSTANTIATE(uint8_t)
VKLLM_GGUF_INSTANTIATE(int8_t)
VKLLM_GGUF_INSTANTIATE(uint16_t)
VKLLM_GGUF_INSTANTIATE(int16_t)
VKLLM_GGUF_INSTANTIATE(uint32_t)
VKLLM_GGUF_INSTANTIATE(int32_t)
VKLLM_GGUF_INSTANTIATE(uint64_t)
VKLLM_GGUF_INSTANTIATE(int64_t)
VKLLM_GGUF_INSTANTIATE(float)
VKLLM_GGUF_INSTANTIATE(double)
VKLLM_GGUF_INSTANTIATE(bool)
VKLLM_GGUF_INSTANTIATE(std::string)
#undef VKLLM_GGUF_INSTANTIATE

}  // namespace vkllm::gguf
