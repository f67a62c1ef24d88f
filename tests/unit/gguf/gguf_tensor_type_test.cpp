#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "engine/gguf/tensor_type.h"

namespace vkllm::gguf {
namespace {

struct Expected {
  uint32_t id;
  const char* name;
  uint32_t block_elements;
  uint32_t block_bytes;
};

// Values from ggml's type_traits table (ggml.c) and block structs (ggml-common.h).
constexpr Expected kGgml[] = {
    {0, "f32", 1, 4},         {1, "f16", 1, 2},       {2, "q4_0", 32, 18},
    {3, "q4_1", 32, 20},      {6, "q5_0", 32, 22},    {7, "q5_1", 32, 24},
    {8, "q8_0", 32, 34},      {9, "q8_1", 32, 36},    {10, "q2_K", 256, 84},
    {11, "q3_K", 256, 110},   {12, "q4_K", 256, 144}, {13, "q5_K", 256, 176},
    {14, "q6_K", 256, 210},   {15, "q8_K", 256, 292}, {20, "iq4_nl", 32, 18},
    {23, "iq4_xs", 256, 136}, {24, "i8", 1, 1},       {25, "i16", 1, 2},
    {26, "i32", 1, 4},        {27, "i64", 1, 8},      {28, "f64", 1, 8},
    {30, "bf16", 1, 2},       {39, "mxfp4", 32, 17},
};

TEST(TensorType, TraitsMatchGgml) {
  for (const auto& e : kGgml) {
    SCOPED_TRACE(e.name);
    auto t = type_traits(e.id);
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->name, e.name);
    EXPECT_EQ(t->block_elements, e.block_elements);
    EXPECT_EQ(t->block_bytes, e.block_bytes);
    const auto type = static_cast<TensorType>(e.id);
    EXPECT_EQ(type_name(type), e.name);
    EXPECT_EQ(traits(type).block_bytes, e.block_bytes);
  }
}

TEST(TensorType, RemovedAndUnknownIdsHaveNoTraits) {
  for (uint32_t id :
       {4u, 5u, 16u, 17u, 18u, 19u, 21u, 22u, 29u, 31u, 33u, 38u, 1000u, 0xffffffffu}) {
    EXPECT_FALSE(type_traits(id).has_value()) << id;
  }
  EXPECT_THROW(traits(static_cast<TensorType>(4)), std::invalid_argument);
}

TEST(TensorType, NameParsingIsCaseInsensitive) {
  for (const auto& e : kGgml) {
    std::string upper = e.name;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    std::string lower = e.name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const std::string& n : {std::string(e.name), upper, lower}) {
      auto t = type_from_name(n);
      ASSERT_TRUE(t.has_value()) << n;
      EXPECT_EQ(static_cast<uint32_t>(*t), e.id) << n;
    }
  }
  EXPECT_EQ(type_from_name("Q4_K"), TensorType::Q4_K);
  EXPECT_FALSE(type_from_name("q4_k_m").has_value());
  EXPECT_FALSE(type_from_name("").has_value());
  EXPECT_FALSE(type_from_name("f3").has_value());
  EXPECT_FALSE(type_from_name("q4").has_value());
}

TEST(TensorType, RowBytes) {
  for (const auto& e : kGgml) {
    const auto type = static_cast<TensorType>(e.id);
    EXPECT_EQ(row_bytes(type, 0), 0u);
    EXPECT_EQ(row_bytes(type, e.block_elements), e.block_bytes);
    EXPECT_EQ(row_bytes(type, 7ull * e.block_elements), 7ull * e.block_bytes);
    if (e.block_elements > 1) {
      EXPECT_THROW(row_bytes(type, e.block_elements + 1), std::invalid_argument) << e.name;
    }
  }
  EXPECT_EQ(row_bytes(TensorType::Q4_K, 4096), 16u * 144u);
  EXPECT_THROW(row_bytes(TensorType::F64, 1ull << 62), std::overflow_error);
}

}  // namespace
}  // namespace vkllm::gguf
