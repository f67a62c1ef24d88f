// MXFP4 (GGUF type 39, gpt-oss's expert weights): dequantization and a quantizer whose bytes
// equal ggml's quantize_row_mxfp4_ref for every input, so `make-model` fixtures are the files
// llama-quantize would write (tests/reference/mxfp4 holds ggml's bytes for fixed rows).
#include <cmath>
#include <cstdint>

#include "engine/gguf/block_layouts.h"
#include "engine/gguf/quants_detail.h"

namespace vkllm::gguf::detail {
namespace {

void dequantize_mxfp4(const uint8_t* src, float* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, dst += kLegacyBlock) {
    const auto blk = load_block<BlockMXFP4>(src, b);
    const float d = mxfp4_half_scale(blk.e);
    for (size_t j = 0; j < kLegacyBlock / 2; ++j) {
      dst[j] = static_cast<float>(kMxfp4Values[blk.qs[j] & 15]) * d;
      dst[j + kLegacyBlock / 2] = static_cast<float>(kMxfp4Values[blk.qs[j] >> 4]) * d;
    }
  }
}

// The shared exponent as ggml picks it: floor(log2f(amax)) - 2 + 127, so that amax in
// [2^k, 2^(k+1)) gets the scale 2^(k-2) and the largest code (6) reaches 1.5 * 2^k (larger
// values clamp). log2f is used as ggml uses it: it rounds values just below a large power of two
// up to the integer, which takes the next exponent. ggml converts the float to uint8_t, which C
// leaves undefined outside 0..255; x86 compilers truncate it to a 32-bit int and keep the low
// byte (a tiny amax wraps, an infinite one gives 0), reproduced here.
uint8_t mxfp4_exponent(float amax) {
  if (!(amax > 0.0f)) return 0;
  if (std::isinf(amax)) return 0;
  const float e = std::floor(std::log2(amax)) - 2.0f + 127.0f;
  return static_cast<uint8_t>(static_cast<int32_t>(e));
}

// The code whose value is nearest to x at scale d; the first of equals wins (so +0 over -0 and
// the smaller magnitude at a midpoint), and NaN (no err compares less) gives code 0.
uint8_t nearest_mxfp4_code(float x, float d) {
  uint8_t best = 0;
  float best_err = std::fabs(static_cast<float>(kMxfp4Values[0]) * d - x);
  for (uint8_t i = 1; i < 16; ++i) {
    const float err = std::fabs(static_cast<float>(kMxfp4Values[i]) * d - x);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return best;
}

void quantize_mxfp4(const float* src, uint8_t* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, src += kLegacyBlock) {
    float amax = 0.0f;  // NaNs never compare greater, so they do not set the scale
    for (size_t j = 0; j < kLegacyBlock; ++j) {
      if (amax < std::fabs(src[j])) amax = std::fabs(src[j]);
    }
    BlockMXFP4 blk;
    blk.e = mxfp4_exponent(amax);
    const float d = mxfp4_half_scale(blk.e);
    for (size_t j = 0; j < kLegacyBlock / 2; ++j) {
      blk.qs[j] = static_cast<uint8_t>(nearest_mxfp4_code(src[j], d) |
                                       nearest_mxfp4_code(src[j + kLegacyBlock / 2], d) << 4);
    }
    store_block(dst, b, blk);
  }
}

constexpr FormatKernels kFp4Kernels[] = {
    {TensorType::MXFP4, kLegacyBlock, sizeof(BlockMXFP4), dequantize_mxfp4, quantize_mxfp4},
};

}  // namespace

std::span<const FormatKernels> fp4_kernels() {
  return kFp4Kernels;
}

}  // namespace vkllm::gguf::detail
