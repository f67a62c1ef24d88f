// Internal to quant_matmul*.cpp: the quantized activation blocks and the per-ISA row kernels.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/gguf/block_layouts.h"
#include "engine/gguf/tensor_type.h"

namespace vkllm::cpu::detail {

// Activations for the K-quant kernels: ggml's Q8_K (f32 scale, 256 int8, sums of each 16).
using ActQ8K = gguf::BlockQ8_K;

// Activations for the 32-element formats: int8 values, their scale and their plain sum (the
// zero-point terms of Q4_0 / Q4_1 / Q5_x need sum(q) once per block, not per element).
struct ActQ8_0 {
  float d;
  int32_t sum;
  int8_t qs[gguf::kLegacyBlock];
};
static_assert(sizeof(ActQ8_0) == 40);

// Activations for the 512-bit Q8_0 kernel, one token's row: the cols int8 values plus 128 as
// bytes (so they can be vpdpbusd's unsigned operand against the signed weights), then the block
// scales as floats; the row is padded to 64 bytes. In an unnamed namespace: the ISA files must
// not emit a shared (weak) copy of anything a baseline file also calls.
namespace {
constexpr uint64_t act_q8_0u_scales_offset(uint64_t cols) {
  return (cols + 63) / 64 * 64;
}
constexpr uint64_t act_q8_0u_bytes(uint64_t cols) {
  return (act_q8_0u_scales_offset(cols) + cols / gguf::kLegacyBlock * sizeof(float) + 63) / 64 * 64;
}
}  // namespace

enum class ActFormat : uint8_t { F32, Q8_0, Q8_K, Q8_0U };
constexpr int kActFormats = 4;

// out[t] = row · x_t for t < ntok (1..the kernel's max_tokens): `row` is one weight row of `cols`
// elements, x_t lies at x + t * x_stride bytes in the kernel's activation format (for F32, floats).
using RowKernel = void (*)(const std::byte* row, uint64_t cols, const std::byte* x,
                           uint64_t x_stride, unsigned ntok, float* out);

// out[4 * r + t] = row_r · x_t for four consecutive rows (row_r at row + r * row_stride) and
// t < ntok (1..4): a register tile that reuses each activation load for four rows, where the
// activations are wide enough (f32) that their traffic, not the arithmetic, bounds one row.
using TileKernel = void (*)(const std::byte* row, uint64_t row_stride, uint64_t cols,
                            const std::byte* x, uint64_t x_stride, unsigned ntok, float* out);

// y[r] = (or +=, with accumulate) row r · x for r < nrows, rows row_bytes apart, for one token:
// the row kernel's body inlined in a loop over the rows, so narrow rows (a few blocks, as in
// small models and their output heads) pay no call per row. While a row is computed, the bytes
// prefetch_distance ahead are asked for, a row's worth (stopping at `end`, the tensor's end).
using RowsKernel = void (*)(const std::byte* row, uint64_t row_bytes, uint64_t nrows, uint64_t cols,
                            const std::byte* x, float* y, bool accumulate, const std::byte* end,
                            uint64_t prefetch_distance);

struct FastKernel {
  RowKernel fn = nullptr;
  ActFormat act = ActFormat::F32;
  TileKernel tile = nullptr;  // optional, used for runs of four rows
  // Tokens fn takes per call (ntok up to this): the 512-bit integer kernels take 8, so a
  // weight block is unpacked once for twice as many tokens (32 zmm registers hold the sums).
  unsigned max_tokens = 4;
  RowsKernel rows1 = nullptr;  // optional, used for decode (one token)
};

// The fast kernel of one ISA for a weight type, or {nullptr} where that ISA has none.
FastKernel avx2_kernel(gguf::TensorType type);
FastKernel avx512_kernel(gguf::TensorType type);

// Tokens per call of a tile kernel and of a row kernel with the default max_tokens.
constexpr unsigned kMaxTokensPerKernel = 4;
constexpr unsigned kMaxRowTokens = 8;  // the largest FastKernel::max_tokens

}  // namespace vkllm::cpu::detail
