// libFuzzer target: GgufFile::parse must reject malformed input with GgufError (or LayoutError,
// for a well-formed file that half-matches an Ollama-converter layout) and never read out of
// bounds; whatever it accepts, translated or not, must be safe to query through every accessor.
// A vision tower inside the file (Ollama's single-file gemma3 / mistral3) is read out as an mmproj
// (engine/gguf/inline_projector.h) as the server does at load: never a read outside the file.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/inline_projector.h"
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

// What the loader does with a model file's raw view: find a tower it reads, extract it.
void extract_tower(std::span<const uint8_t> input) {
  const GgufFile raw = GgufFile::parse(input, vkllm::gguf::ReadLayout::Raw);
  if (vkllm::gguf::inline_projector_arch(raw).empty()) return;
  const std::vector<uint8_t> mmproj =
      vkllm::gguf::extract_inline_projector(raw, [&](uint64_t offset, std::span<uint8_t> out) {
        const uint64_t data = input.size() - raw.data_offset();
        if (offset > data || out.size() > data - offset) __builtin_trap();
        std::memcpy(out.data(), input.data() + raw.data_offset() + offset, out.size());
      });
  const GgufFile projector = GgufFile::parse(mmproj, vkllm::gguf::ReadLayout::Raw);
  g_sink = g_sink + projector.tensors().size();
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
  try {
    extract_tower(std::span<const uint8_t>(data, size));
  } catch (const GgufError&) {
  } catch (const vkllm::gguf::LayoutError&) {
  }
  return 0;
}
