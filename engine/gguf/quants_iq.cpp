// Non-linear 4-bit formats IQ4_NL and IQ4_XS (dequantization only: llama.cpp needs an
// importance matrix to produce good IQ files, which `make-model` never does).
#include "engine/gguf/block_layouts.h"
#include "engine/gguf/quants.h"
#include "engine/gguf/quants_detail.h"

namespace vkllm::gguf::detail {
namespace {

// 32 elements from 16 bytes of nibbles: low nibbles are elements 0..15, high nibbles 16..31.
void decode_codebook_nibbles(const uint8_t* qs, float scale, float* dst) {
  for (size_t j = 0; j < 16; ++j) {
    dst[j] = scale * kIq4nlValues[qs[j] & 15];
    dst[j + 16] = scale * kIq4nlValues[qs[j] >> 4];
  }
}

void dequantize_iq4_nl(const uint8_t* src, float* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, dst += kLegacyBlock) {
    const auto blk = load_block<BlockIQ4_NL>(src, b);
    decode_codebook_nibbles(blk.qs, fp16_to_fp32(blk.d), dst);
  }
}

void dequantize_iq4_xs(const uint8_t* src, float* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b) {
    const auto blk = load_block<BlockIQ4_XS>(src, b);
    const float d = fp16_to_fp32(blk.d);
    for (int g = 0; g < 8; ++g, dst += 32) {
      const int low = (blk.scales_l[g / 2] >> (4 * (g % 2))) & 15;
      const int high = (blk.scales_h >> (2 * g)) & 3;
      decode_codebook_nibbles(blk.qs + 16 * g, d * static_cast<float>((low | high << 4) - 32), dst);
    }
  }
}

constexpr FormatKernels kIqKernels[] = {
    {TensorType::IQ4_NL, kLegacyBlock, sizeof(BlockIQ4_NL), dequantize_iq4_nl, nullptr},
    {TensorType::IQ4_XS, kSuperBlock, sizeof(BlockIQ4_XS), dequantize_iq4_xs, nullptr},
};

}  // namespace

std::span<const FormatKernels> iq_kernels() {
  return kIqKernels;
}

}  // namespace vkllm::gguf::detail
