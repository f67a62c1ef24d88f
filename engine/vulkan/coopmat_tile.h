// How the tensor-core GEMM (shaders/matmul_coopmat.comp) is shaped for one product: its output
// tile (subgroups and 16x16 fragments each way), how its K slices reach shared memory, the
// measured defaults by token count and weight type, and the tuning's and environment's overrides.
// Part of the matmul kernels' implementation (matmul_ops.cpp), not the module's interface.
#pragma once

#include <cstdint>

#include "engine/gguf/tensor_type.h"
#include "engine/vulkan/device.h"
#include "engine/vulkan/matmul_ops.h"

namespace vkllm::vk::detail {

struct CoopMatTile {
  uint32_t warps_m, warps_n, frags_m, frags_n;
  // BATCHED_LOADS with f16 activations (f32 ones load item by item): 2 pipelined, 1 batched.
  uint32_t batched_loads = 2;
  uint32_t slice_k = 32, stages = 2;  // BK and STAGES in matmul_coopmat.comp
  uint32_t tokens() const { return 16 * warps_m * frags_m; }
  uint32_t rows() const { return 16 * warps_n * frags_n; }
};

// The unit in which split-K minimum lengths are counted (the kernel's original slice width).
constexpr uint32_t kCoopSplitUnitK = 32;
// Token counts up to which a product is batched decode for the tensor-core GEMM (narrow tiles, the
// decode split-K target); above it, prefill.
constexpr uint32_t kCoopDecodeTokens = 64;

// Shared memory of matmul_coopmat.comp: `stages` f16 slices of slice_k (+8 padding) per tile row,
// and one f32 16x16 staging fragment per subgroup.
uint64_t coopmat_shared_bytes(const CoopMatTile& t);

// The tile for a product of `batch` tokens on weights of `type` (x_f16: the activations arrive
// converted to f16): the defaults, then the tuning's tiles and slices by product size, then its
// overrides for every size.
CoopMatTile coopmat_tile(const MatmulTuning& t, uint32_t batch, bool x_f16, gguf::TensorType type);

// Throws std::invalid_argument where `tile` cannot run on a device with `caps`.
void check_coopmat_tile(const CoopMatTile& tile, const DeviceCapabilities& caps);

}  // namespace vkllm::vk::detail
