// libFuzzer target: GgufFile::parse must reject malformed input with GgufError (or LayoutError,
// for a well-formed file that half-matches an Ollama-converter layout) and never read out of
// bounds; whatever it accepts, translated or not, must be safe to query through every accessor.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/ollama_layout.h"

namespace {

using vkllm::gguf::Array;
using vkllm::gguf::GgufError;
using vkllm::gguf::GgufFile;
using vkllm::gguf::Value;
using vkllm::gguf::ValueType;

volatile uint64_t g_sink;  // keeps the optimiser from dropping the reads

template <typename T>
void try_get(const GgufFile& f, std::string_view key) {
  try {
    if (auto v = f.get_optional<T>(key)) g_sink = g_sink + sizeof(*v);
    g_sink = g_sink + f.get_array<T>(key).size();
  } catch (const GgufError&) {
  }
}

void walk(const Value& v, int depth) {
  g_sink = g_sink + static_cast<uint32_t>(v.type()) + depth;
  if (auto* a = std::get_if<std::shared_ptr<Array>>(&v.v)) {
    for (const Value& item : (*a)->items) walk(item, depth + 1);
  } else if (auto* s = std::get_if<std::string>(&v.v)) {
    for (char c : *s) g_sink = g_sink + static_cast<uint8_t>(c);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const GgufFile f = GgufFile::parse(std::span<const uint8_t>(data, size));
    g_sink = g_sink + f.version() + f.alignment() + f.data_offset() + f.bytes().size();
    for (std::string_view key : f.metadata_keys()) {
      walk(*f.find(key), 0);
      try_get<bool>(f, key);
      try_get<uint8_t>(f, key);
      try_get<int8_t>(f, key);
      try_get<uint16_t>(f, key);
      try_get<int16_t>(f, key);
      try_get<uint32_t>(f, key);
      try_get<int32_t>(f, key);
      try_get<uint64_t>(f, key);
      try_get<int64_t>(f, key);
      try_get<float>(f, key);
      try_get<double>(f, key);
      try_get<std::string>(f, key);
    }
    for (const auto& t : f.tensors()) {
      if (f.find_tensor(t.name) != &t) __builtin_trap();
      g_sink = g_sink + t.element_count() + vkllm::gguf::type_name(t.type).size();
      auto bytes = f.tensor_data(t);
      if (bytes.size() != t.byte_size) __builtin_trap();
      // Touch the first and last byte of every span: ASan flags anything outside the input.
      if (!bytes.empty()) g_sink = g_sink + bytes.front() + bytes.back();
    }
  } catch (const GgufError&) {
  } catch (const vkllm::gguf::LayoutError&) {
  }
  return 0;
}
