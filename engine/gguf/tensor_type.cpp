#include "engine/gguf/tensor_type.h"

#include <array>
#include <stdexcept>
#include <string>

namespace vkllm::gguf {
namespace {

struct TypeEntry {
  TensorType type;
  TypeTraits traits;
};

// Block sizes and byte counts follow ggml's block_* structs (ggml-common.h); QK_K = 256.
constexpr std::array<TypeEntry, 23> kTypes{{
    {TensorType::F32, {"f32", 1, 4}},
    {TensorType::F16, {"f16", 1, 2}},
    {TensorType::Q4_0, {"q4_0", 32, 2 + 16}},
    {TensorType::Q4_1, {"q4_1", 32, 2 + 2 + 16}},
    {TensorType::Q5_0, {"q5_0", 32, 2 + 4 + 16}},
    {TensorType::Q5_1, {"q5_1", 32, 2 + 2 + 4 + 16}},
    {TensorType::Q8_0, {"q8_0", 32, 2 + 32}},
    {TensorType::Q8_1, {"q8_1", 32, 2 + 2 + 32}},
    {TensorType::Q2_K, {"q2_K", 256, 16 + 64 + 2 + 2}},
    {TensorType::Q3_K, {"q3_K", 256, 32 + 64 + 12 + 2}},
    {TensorType::Q4_K, {"q4_K", 256, 2 + 2 + 12 + 128}},
    {TensorType::Q5_K, {"q5_K", 256, 2 + 2 + 12 + 32 + 128}},
    {TensorType::Q6_K, {"q6_K", 256, 128 + 64 + 16 + 2}},
    {TensorType::Q8_K, {"q8_K", 256, 4 + 256 + 32}},
    {TensorType::IQ4_NL, {"iq4_nl", 32, 2 + 16}},
    {TensorType::IQ4_XS, {"iq4_xs", 256, 2 + 2 + 4 + 128}},
    {TensorType::I8, {"i8", 1, 1}},
    {TensorType::I16, {"i16", 1, 2}},
    {TensorType::I32, {"i32", 1, 4}},
    {TensorType::I64, {"i64", 1, 8}},
    {TensorType::F64, {"f64", 1, 8}},
    {TensorType::BF16, {"bf16", 1, 2}},
    {TensorType::MXFP4, {"mxfp4", 32, 1 + 16}},
}};

const TypeEntry* find_entry(uint32_t raw) {
  for (const auto& e : kTypes) {
    if (static_cast<uint32_t>(e.type) == raw) return &e;
  }
  return nullptr;
}

char ascii_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

}  // namespace

std::optional<TypeTraits> type_traits(uint32_t raw_type) {
  const TypeEntry* e = find_entry(raw_type);
  if (!e) return std::nullopt;
  return e->traits;
}

const TypeTraits& traits(TensorType type) {
  const TypeEntry* e = find_entry(static_cast<uint32_t>(type));
  if (!e) {
    throw std::invalid_argument("unknown tensor type id " +
                                std::to_string(static_cast<uint32_t>(type)));
  }
  return e->traits;
}

std::string_view type_name(TensorType type) {
  return traits(type).name;
}

std::optional<TensorType> type_from_name(std::string_view name) {
  for (const auto& e : kTypes) {
    if (iequals(e.traits.name, name)) return e.type;
  }
  return std::nullopt;
}

size_t row_bytes(TensorType type, uint64_t n) {
  const TypeTraits& t = traits(type);
  if (n % t.block_elements != 0) {
    throw std::invalid_argument("row of " + std::to_string(n) + " elements is not a multiple of " +
                                std::string(t.name) + "'s block size " +
                                std::to_string(t.block_elements));
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(n / t.block_elements, uint64_t{t.block_bytes}, &bytes)) {
    throw std::overflow_error("row of " + std::to_string(n) + " " + std::string(t.name) +
                              " elements overflows a 64-bit byte count");
  }
  return static_cast<size_t>(bytes);
}

}  // namespace vkllm::gguf
