// Internal to amx_matmul.cpp: the tile-level pieces of the AMX matmul, built with the AMX and
// AVX512-BF16 flags in amx_kernels.cpp and called only where isa.h found Isa::Amx.
//
// Layouts (bf16 values as uint16_t). One K step is 32 columns, the K of one TDPBF16PS.
// - Activations (the A operand, 16 tokens per tile): a token tile's panel is
//   [step][16 tokens][32 cols], so the tile of one step is 1 KiB of consecutive memory.
// - Weights (the B operand, 16 rows per tile, VNNI pairs): a row tile's panel is
//   [step][16 column pairs][16 rows][2 cols].
// - Results: 16 x 16 f32 tiles [token][row] in a caller's buffer with a token stride, so a
//   token's results for consecutive rows are consecutive, as in the matmul's output.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/gguf/tensor_type.h"

namespace vkllm::cpu::detail {

inline constexpr uint32_t kAmxTile = 16;  // rows, tokens per tile
inline constexpr uint32_t kAmxStep = 32;  // columns per K step
inline constexpr uint64_t kAmxTileElems = kAmxTile * kAmxStep;

// Which products of the bf16 halves (v = hi + lo, hi = bf16(v), lo = bf16(v - hi)) are summed:
// enough bits for the weight type, as few tile products as that allows.
enum class AmxPrecision : uint8_t {
  Single,     // w_hi x_hi: quantized weights, whose other paths round x to 8 bits
  SplitX,     // w x_hi + w x_lo: BF16 weights (exact in bf16)
  SplitBoth,  // w_hi x_hi + w_lo x_hi + w_hi x_lo: F16 / F32 weights, ~16 bits on each side
};

// Packs tokens x_0..x_{ntok-1} (ntok <= 16; x_t at x + t * x_stride, cols floats) as one token
// tile's panels of `steps` K steps; missing tokens and columns past cols are zero. lo may be null.
void amx_pack_x(const float* x, uint64_t x_stride, uint32_t ntok, uint64_t cols, uint32_t steps,
                uint16_t* hi, uint16_t* lo);

// Dequantizes n elements (whole blocks) of one row to floats with AVX-512 where this file has a
// kernel for the type (fast_dequant in amx_matmul.cpp lists them); false for the others,
// which the caller dequantizes with engine/gguf (the same values, ~15x slower).
bool amx_dequantize(gguf::TensorType type, const std::byte* src, float* dst, uint64_t n);

// Packs rows 0..nrows-1 (nrows <= 16) of f32 weights (row r at w + r * w_stride, steps * 32
// floats, zero past the matrix's columns) as one row tile's panels; rows past nrows are zero.
// lo may be null.
void amx_pack_w(const float* w, uint64_t w_stride, uint32_t nrows, uint32_t steps, uint16_t* hi,
                uint16_t* lo);

// One block of up to 2 token tiles x 2 row tiles over `steps` K steps:
// c[i][j] (+)= sum over the precision's products of x[i] x w[j].
struct AmxBlock {
  const uint16_t* x_hi[2];
  const uint16_t* x_lo[2];  // SplitX / SplitBoth only
  const uint16_t* w_hi[2];
  const uint16_t* w_lo[2];  // SplitBoth only
  float* c;                 // tile (i, j) at c + i * 16 * c_stride + j * 16
  uint64_t c_stride;        // floats
  uint32_t steps;
  bool two_tokens;  // else only token tile 0
  bool zero;        // start from zero instead of c
};

// Loads this thread's tile configuration (every tile 16 x 64 bytes); call before amx_block on
// a thread, and amx_end after, which returns the tile registers to their initial state.
void amx_begin();
void amx_end();
void amx_block(const AmxBlock& b, AmxPrecision precision);

}  // namespace vkllm::cpu::detail
