// The tensor-core GEMM's tile choice (engine/vulkan/coopmat_tile.h), checked on the host: it runs
// only on GPUs with cooperative matrices, so CI (lavapipe) would otherwise never see a default
// that no longer fits NVIDIA's 48 KiB of shared memory or an override that is silently dropped.
#include "engine/vulkan/coopmat_tile.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace vkllm::vk::detail {
namespace {

using gguf::TensorType;

// An NVIDIA GPU's limits as the Vulkan driver reports them (H100: 48 KiB of shared memory).
DeviceCapabilities nvidia_limits() {
  DeviceCapabilities caps;
  caps.subgroup_size = 32;
  caps.max_shared_memory = 48 * 1024;
  caps.max_workgroup_invocations = 1024;
  caps.max_workgroup_size = {1024, 1024, 64};
  return caps;
}

const TensorType kTypes[] = {TensorType::F16,  TensorType::Q4_0, TensorType::Q8_0,
                             TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};
const uint32_t kTokenCounts[] = {1, 16, 17, 32, 33, 64, 65, 512};

TEST(CoopMatTile, EveryDefaultFitsAnNvidiaGpu) {
  const DeviceCapabilities caps = nvidia_limits();
  for (TensorType type : kTypes)
    for (uint32_t batch : kTokenCounts)
      for (bool x_f16 : {false, true}) {
        SCOPED_TRACE(std::to_string(static_cast<int>(type)) + " batch " + std::to_string(batch));
        const CoopMatTile tile = coopmat_tile({}, batch, x_f16, type);
        EXPECT_NO_THROW(check_coopmat_tile(tile, caps));
        // f32 activations are always loaded item by item (no registers for batching them).
        if (!x_f16) {
          EXPECT_EQ(tile.batched_loads, 0u);
        }
      }
}

TEST(CoopMatTile, TileRowsFollowTheTokenCount) {
  // Batched decode never pads 17..64 tokens up to a prefill tile.
  EXPECT_EQ(coopmat_tile({}, 17, true, TensorType::Q4_K).tokens(), 32u);
  EXPECT_EQ(coopmat_tile({}, 33, true, TensorType::Q4_K).tokens(), 64u);
  EXPECT_GT(coopmat_tile({}, kCoopDecodeTokens + 1, true, TensorType::Q4_K).tokens(), 64u);
  // Wide slices where they were measured faster: 17..32 tokens for every type, 33..64 for
  // quantized weights only.
  EXPECT_EQ(coopmat_tile({}, 32, true, TensorType::F16).slice_k, 64u);
  EXPECT_EQ(coopmat_tile({}, 64, true, TensorType::F16).slice_k, 32u);
  EXPECT_EQ(coopmat_tile({}, 64, true, TensorType::Q4_K).slice_k, 64u);
}

TEST(CoopMatTile, SharedMemoryMatchesTheKernelsLayout) {
  // 128 tokens x 64 rows in two 32-wide buffers of rows padded by 8 halves, plus one f32
  // fragment per subgroup: the 38912 bytes the NVIDIA driver reports for this pipeline.
  CoopMatTile tile{4, 2, 2, 2};
  EXPECT_EQ(coopmat_shared_bytes(tile), 38912u);
  tile.slice_k = 64;
  EXPECT_EQ(coopmat_shared_bytes(tile), 2u * 192 * 72 * 2 + 8 * 1024);
  tile.stages = 1;
  EXPECT_EQ(coopmat_shared_bytes(tile), 192u * 72 * 2 + 8 * 1024);
}

TEST(CoopMatTile, TuningOverridesAndItsLimits) {
  const DeviceCapabilities caps = nvidia_limits();
  const CoopMatTile wide = coopmat_tile({.cm_warps_m = 2,
                                         .cm_warps_n = 2,
                                         .cm_frags_m = 2,
                                         .cm_frags_n = 2,
                                         .cm_slice_k = 128,
                                         .cm_stages = 1},
                                        512, true, TensorType::F16);
  EXPECT_EQ(wide.tokens(), 64u);
  EXPECT_EQ(wide.slice_k, 128u);
  EXPECT_NO_THROW(check_coopmat_tile(wide, caps));
  // 64-wide slices in two buffers on the 128 x 64 prefill tile need 63.5 KiB.
  const CoopMatTile too_big =
      coopmat_tile({.cm_slice_k = 64, .cm_stages = 2}, 512, true, TensorType::Q4_K);
  EXPECT_THROW(check_coopmat_tile(too_big, caps), std::invalid_argument);
  EXPECT_THROW(
      check_coopmat_tile(coopmat_tile({.cm_slice_k = 48}, 512, true, TensorType::F16), caps),
      std::invalid_argument);
  EXPECT_THROW(check_coopmat_tile(coopmat_tile({.cm_stages = 3}, 512, true, TensorType::F16), caps),
               std::invalid_argument);
  EXPECT_THROW(
      check_coopmat_tile(
          coopmat_tile({.cm_warps_m = 8, .cm_warps_n = 8}, 512, true, TensorType::F16), caps),
      std::invalid_argument);
  EXPECT_EQ(coopmat_tile({.cm_batched_loads = 1}, 512, true, TensorType::F16).batched_loads, 1u);
}

}  // namespace
}  // namespace vkllm::vk::detail
