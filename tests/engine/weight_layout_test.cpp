// The device layout of repacked weight types (engine/vulkan/weight_layout.h), byte for byte: each
// group of 8 blocks holds the blocks without their 2-byte scale, then the 8 scales; a last,
// partial group is laid out as a whole one. The decoders rely on exactly this (the matvec, GEMM
// and get_rows tests check them through it); this pins the layout itself.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <vector>

#include "engine/vulkan/arena.h"
#include "engine/vulkan/command_recorder.h"
#include "engine/vulkan/weight_layout.h"
#include "tests/engine/kernel_test_support.h"

namespace vkllm::test {
namespace {

using gguf::TensorType;

struct Format {
  TensorType type;
  uint32_t block_bytes, scale_offset;
};

// The expected device bytes of `file` (whole blocks), by the layout's definition.
std::vector<uint8_t> repacked(const Format& f, const std::vector<uint8_t>& file) {
  const uint64_t group = 8ull * f.block_bytes;
  std::vector<uint8_t> padded = file;
  padded.resize((file.size() + group - 1) / group * group, 0);
  std::vector<uint8_t> out(padded.size());
  const uint32_t body = f.block_bytes - 2;
  for (uint64_t g = 0; g < padded.size(); g += group) {
    for (uint32_t j = 0; j < 8; ++j) {
      const uint8_t* block = padded.data() + g + j * f.block_bytes;
      uint8_t* dst = out.data() + g + j * body;
      std::memcpy(dst, block, f.scale_offset);
      std::memcpy(dst + f.scale_offset, block + f.scale_offset + 2, body - f.scale_offset);
      std::memcpy(out.data() + g + 8 * body + 2 * j, block + f.scale_offset, 2);
    }
  }
  return out;
}

TEST(WeightLayout, RepackedTypesMatchTheDocumentedLayout) {
  SeededRng rng;
  for (const Format f : {Format{TensorType::Q8_0, 34, 0}, Format{TensorType::Q6_K, 210, 208}}) {
    ASSERT_TRUE(vk::repacked_on_device(f.type));
    // A whole number of groups, and a last partial group.
    for (uint32_t blocks : {16u, 8u * 5 + 3, 1u}) {
      SCOPED_TRACE(std::string(gguf::type_name(f.type)) + ", " + std::to_string(blocks) +
                   " blocks");
      std::vector<uint8_t> file(size_t{blocks} * f.block_bytes);
      for (auto& b : file) b = static_cast<uint8_t>(rng.below(256));
      const uint64_t device_bytes = vk::device_weight_bytes(f.type, file.size());
      EXPECT_EQ(device_bytes, (blocks + 7) / 8 * 8ull * f.block_bytes);
      vk::Arena arena(vk_context().device(), "weight layout test", 1 << 20);
      const vk::BufferSlice slice = weights_to_device(arena, f.type, file);
      const auto got = from_device<uint8_t>(slice, device_bytes);
      const auto want = repacked(f, file);
      // The padding blocks of a partial group are garbage in, garbage out: compare the bodies
      // and scales of the tensor's own blocks.
      const uint32_t body = f.block_bytes - 2;
      for (uint32_t b = 0; b < blocks; ++b) {
        const uint64_t g = uint64_t{b / 8} * 8 * f.block_bytes;
        const uint64_t at = g + (b % 8) * body, scale_at = g + 8 * body + 2 * (b % 8);
        ASSERT_EQ(0, std::memcmp(got.data() + at, want.data() + at, body)) << "block " << b;
        ASSERT_EQ(0, std::memcmp(got.data() + scale_at, want.data() + scale_at, 2))
            << "scale of block " << b;
      }
    }
  }
}

TEST(WeightLayout, OtherTypesStayAsTheFileHasThem) {
  for (TensorType t : {TensorType::F16, TensorType::Q4_0, TensorType::Q4_K, TensorType::Q5_K}) {
    EXPECT_FALSE(vk::repacked_on_device(t));
    EXPECT_EQ(vk::device_weight_bytes(t, 1234), 1234u);
  }
}

TEST(WeightLayout, RejectsPartialBlocksAndShortSlices) {
  vk::Arena arena(vk_context().device(), "weight layout test", 1 << 16);
  const vk::BufferSlice slice = arena.allocate(4096);
  vk::CommandRecorder rec(vk_context().device());
  rec.begin();
  EXPECT_THROW(
      vk::record_repack_weights(rec, vk_context().pipelines(), TensorType::Q6_K, slice, 211),
      std::invalid_argument);  // not whole blocks
  EXPECT_THROW(vk::record_repack_weights(rec, vk_context().pipelines(), TensorType::Q6_K,
                                         slice.sub(0, 1024), 2 * 210),
               std::invalid_argument);  // a group of 8 blocks does not fit
  rec.submit_and_wait();
}

}  // namespace
}  // namespace vkllm::test
