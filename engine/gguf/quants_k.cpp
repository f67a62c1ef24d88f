// K-quants: 256-element super-blocks with quantized per-group scales (Q2_K..Q6_K, Q8_K).
//
// The quantizers search each group's scale (and min) the way llama.cpp's reference quantizers
// do: start from the range-derived scale, then try a grid of nearby inverse scales and keep the
// one whose weighted least-squares refit gives the smallest error. The group scales are then
// quantized themselves and the elements re-rounded against those final scales.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/gguf/block_layouts.h"
#include "engine/gguf/k_scale_fit.h"
#include "engine/gguf/quants.h"
#include "engine/gguf/quants_detail.h"

namespace vkllm::gguf::detail {
namespace {

// ---------------------------------------------------------------------------------------------
// Packed 6-bit scale/min pairs of Q4_K and Q5_K: groups 0-3 use the low 6 bits of bytes 0-3
// (scale) and 4-7 (min); groups 4-7 keep their low 4 bits in bytes 8-11 and their top 2 bits in
// the spare top bits of bytes 0-7.
void unpack_scale_min(const uint8_t* packed, int group, int* scale, int* min) {
  if (group < 4) {
    *scale = packed[group] & 63;
    *min = packed[group + 4] & 63;
  } else {
    *scale = (packed[group + 4] & 15) | ((packed[group - 4] >> 6) << 4);
    *min = (packed[group + 4] >> 4) | ((packed[group] >> 6) << 4);
  }
}

void pack_scale_min(uint8_t* packed, int group, int scale, int min) {
  if (group < 4) {
    packed[group] = static_cast<uint8_t>((packed[group] & 0xc0) | scale);
    packed[group + 4] = static_cast<uint8_t>((packed[group + 4] & 0xc0) | min);
  } else {
    packed[group + 4] = static_cast<uint8_t>((scale & 15) | ((min & 15) << 4));
    packed[group - 4] = static_cast<uint8_t>(packed[group - 4] | ((scale >> 4) << 6));
    packed[group] = static_cast<uint8_t>(packed[group] | ((min >> 4) << 6));
  }
}

// Q3_K's sixteen 6-bit scales: low 4 bits in bytes 0-7 (group g < 8 low nibble of byte g,
// else high nibble of byte g - 8), top 2 bits in bytes 8-11 (byte 8 + g % 4, bits 2 (g / 4)).
int unpack_q3_scale(const uint8_t* packed, int group) {
  const int low = group < 8 ? packed[group] & 15 : packed[group - 8] >> 4;
  const int high = (packed[8 + group % 4] >> (2 * (group / 4))) & 3;
  return (low | high << 4) - 32;
}

void pack_q3_scales(const int* biased_scales, uint8_t* packed) {
  std::memset(packed, 0, kKScaleBytes);
  for (int g = 0; g < 16; ++g) {
    const int s = biased_scales[g];
    if (g < 8) {
      packed[g] = static_cast<uint8_t>(packed[g] | (s & 15));
    } else {
      packed[g - 8] = static_cast<uint8_t>(packed[g - 8] | ((s & 15) << 4));
    }
    packed[8 + g % 4] = static_cast<uint8_t>(packed[8 + g % 4] | ((s >> 4) << (2 * (g / 4))));
  }
}

// 2-bit fields: in each 128-element half, element r sits in byte r % 32 at bit 2 (r / 32).
void pack_2bit(const uint8_t* q, uint8_t* qs) {
  for (size_t half = 0; half < 2; ++half) {
    const uint8_t* l = q + 128 * half;
    for (size_t j = 0; j < 32; ++j) {
      qs[32 * half + j] =
          static_cast<uint8_t>(l[j] | l[j + 32] << 2 | l[j + 64] << 4 | l[j + 96] << 6);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Q2_K

void dequantize_q2_k(const uint8_t* src, float* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b) {
    const auto blk = load_block<BlockQ2_K>(src, b);
    const float d = fp16_to_fp32(blk.d), dmin = fp16_to_fp32(blk.dmin);
    for (size_t half = 0; half < 2; ++half) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (size_t l = 0; l < 32; ++l) {
          const uint8_t sc = blk.scales[(128 * half + 16 * shift + l) / 16];
          const int q = (blk.qs[32 * half + l] >> shift) & 3;
          *dst++ = d * static_cast<float>(sc & 15) * q - dmin * static_cast<float>(sc >> 4);
        }
      }
    }
  }
}

void quantize_q2_k(const float* src, uint8_t* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, src += kSuperBlock) {
    uint8_t q[kSuperBlock];
    float scales[16], mins[16], weights[kSuperBlock];
    for (size_t i = 0; i < kSuperBlock; ++i) weights[i] = std::fabs(src[i]);
    fit_scale_offset<16, true>(16, src, weights, 3.0f, {-0.5f, 0.1f, 15}, q, scales, mins);
    float max_scale = 0.0f, max_min = 0.0f;
    for (int g = 0; g < 16; ++g) {
      max_scale = std::max(max_scale, scales[g]);
      max_min = std::max(max_min, mins[g]);
    }
    BlockQ2_K blk{};
    if (max_scale > 0.0f) {
      const float inv = 15.0f / max_scale;
      for (int g = 0; g < 16; ++g)
        blk.scales[g] = static_cast<uint8_t>(clamp_int(round_to_int(inv * scales[g]), 0, 15));
      blk.d = fp32_to_fp16(max_scale / 15.0f);
    }
    if (max_min > 0.0f) {
      const float inv = 15.0f / max_min;
      for (int g = 0; g < 16; ++g)
        blk.scales[g] = static_cast<uint8_t>(blk.scales[g] |
                                             clamp_int(round_to_int(inv * mins[g]), 0, 15) << 4);
      blk.dmin = fp32_to_fp16(max_min / 15.0f);
    }
    const float d = fp16_to_fp32(blk.d), dmin = fp16_to_fp32(blk.dmin);
    for (int g = 0; g < 16; ++g) {
      const float dg = d * static_cast<float>(blk.scales[g] & 15);
      if (dg == 0.0f) continue;
      const float mg = dmin * static_cast<float>(blk.scales[g] >> 4);
      for (int l = 0; l < 16; ++l) {
        q[16 * g + l] =
            static_cast<uint8_t>(clamp_int(round_to_int((src[16 * g + l] + mg) / dg), 0, 3));
      }
    }
    pack_2bit(q, blk.qs);
    store_block(dst, b, blk);
  }
}

// ---------------------------------------------------------------------------------------------
// Q3_K

void dequantize_q3_k(const uint8_t* src, float* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b) {
    const auto blk = load_block<BlockQ3_K>(src, b);
    const float d = fp16_to_fp32(blk.d);
    for (size_t i = 0; i < kSuperBlock; ++i) {
      const size_t half = i / 128, r = i % 128;
      const int low = (blk.qs[32 * half + r % 32] >> (2 * (r / 32))) & 3;
      const bool high = (blk.hmask[i % 32] >> (i / 32)) & 1;
      const int q = low - (high ? 0 : 4);
      dst[i] = d * static_cast<float>(unpack_q3_scale(blk.scales, static_cast<int>(i / 16))) * q;
    }
    dst += kSuperBlock;
  }
}

void quantize_q3_k(const float* src, uint8_t* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, src += kSuperBlock) {
    uint8_t q[kSuperBlock];
    float scales[16];
    float max_scale = 0.0f, amax = 0.0f;
    for (int g = 0; g < 16; ++g) {
      scales[g] = fit_q3_scale(src + 16 * g, 16, 4, q + 16 * g);
      if (std::fabs(scales[g]) > amax) {
        amax = std::fabs(scales[g]);
        max_scale = scales[g];
      }
    }
    BlockQ3_K blk{};
    if (max_scale != 0.0f) {
      const float inv = -32.0f / max_scale;
      int biased[16];
      for (int g = 0; g < 16; ++g)
        biased[g] = clamp_int(round_to_int(inv * scales[g]), -32, 31) + 32;
      pack_q3_scales(biased, blk.scales);
      blk.d = fp32_to_fp16(1.0f / inv);
    }
    const float d = fp16_to_fp32(blk.d);
    for (int g = 0; g < 16; ++g) {
      const float dg = d * static_cast<float>(unpack_q3_scale(blk.scales, g));
      if (dg == 0.0f) continue;
      for (int l = 0; l < 16; ++l) {
        q[16 * g + l] =
            static_cast<uint8_t>(clamp_int(round_to_int(src[16 * g + l] / dg), -4, 3) + 4);
      }
    }
    // Bit 2 of each level goes to hmask (element i: bit i / 32 of byte i % 32).
    for (size_t i = 0; i < kSuperBlock; ++i) {
      if (q[i] > 3) {
        blk.hmask[i % 32] = static_cast<uint8_t>(blk.hmask[i % 32] | (1u << (i / 32)));
        q[i] = static_cast<uint8_t>(q[i] - 4);
      }
    }
    pack_2bit(q, blk.qs);
    store_block(dst, b, blk);
  }
}

// ---------------------------------------------------------------------------------------------
// Q4_K and Q5_K share the scale/min search; Q5_K adds a fifth bit per element.

// Fits the 8 groups of 32 and quantizes their scales and mins to 6 bits; leaves the final
// per-element levels (0..qmax) in q.
void fit_scale_min_block(const float* x, int qmax, GridSearch grid, uint16_t* d_out,
                         uint16_t* dmin_out, uint8_t* packed_scales, uint8_t* q) {
  float scales[8], mins[8], weights[kSuperBlock];
  for (int g = 0; g < 8; ++g) {
    const float* xg = x + 32 * g;
    float sum_x2 = 0.0f;
    for (int l = 0; l < 32; ++l) sum_x2 += xg[l] * xg[l];
    // Weight by magnitude plus the group's RMS, so small values still count.
    const float rms = std::sqrt(sum_x2 / 32.0f);
    for (int l = 0; l < 32; ++l) weights[32 * g + l] = rms + std::fabs(xg[l]);
  }
  fit_scale_offset<32, false>(8, x, weights, static_cast<float>(qmax), grid, q, scales, mins);
  float max_scale = 0.0f, max_min = 0.0f;
  for (int g = 0; g < 8; ++g) {
    max_scale = std::max(max_scale, scales[g]);
    max_min = std::max(max_min, mins[g]);
  }
  const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
  std::memset(packed_scales, 0, kKScaleBytes);
  for (int g = 0; g < 8; ++g) {
    pack_scale_min(packed_scales, g, clamp_int(round_to_int(inv_scale * scales[g]), 0, 63),
                   clamp_int(round_to_int(inv_min * mins[g]), 0, 63));
  }
  *d_out = fp32_to_fp16(max_scale / 63.0f);
  *dmin_out = fp32_to_fp16(max_min / 63.0f);
  const float d = fp16_to_fp32(*d_out), dmin = fp16_to_fp32(*dmin_out);
  for (int g = 0; g < 8; ++g) {
    int sc, m;
    unpack_scale_min(packed_scales, g, &sc, &m);
    const float dg = d * static_cast<float>(sc);
    if (dg == 0.0f) continue;
    const float mg = dmin * static_cast<float>(m);
    for (int l = 0; l < 32; ++l) {
      q[32 * g + l] =
          static_cast<uint8_t>(clamp_int(round_to_int((x[32 * g + l] + mg) / dg), 0, qmax));
    }
  }
}

void dequantize_q4_k(const uint8_t* src, float* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b) {
    const auto blk = load_block<BlockQ4_K>(src, b);
    const float d = fp16_to_fp32(blk.d), dmin = fp16_to_fp32(blk.dmin);
    for (int chunk = 0; chunk < 4; ++chunk) {
      int sc0, m0, sc1, m1;
      unpack_scale_min(blk.scales, 2 * chunk, &sc0, &m0);
      unpack_scale_min(blk.scales, 2 * chunk + 1, &sc1, &m1);
      const float d0 = d * sc0, o0 = dmin * m0, d1 = d * sc1, o1 = dmin * m1;
      const uint8_t* qs = blk.qs + 32 * chunk;
      for (int l = 0; l < 32; ++l) dst[l] = d0 * (qs[l] & 15) - o0;
      for (int l = 0; l < 32; ++l) dst[32 + l] = d1 * (qs[l] >> 4) - o1;
      dst += 64;
    }
  }
}

void quantize_q4_k(const float* src, uint8_t* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, src += kSuperBlock) {
    BlockQ4_K blk{};
    uint8_t q[kSuperBlock];
    fit_scale_min_block(src, 15, {-1.0f, 0.1f, 20}, &blk.d, &blk.dmin, blk.scales, q);
    for (int chunk = 0; chunk < 4; ++chunk) {
      for (int l = 0; l < 32; ++l) {
        blk.qs[32 * chunk + l] =
            static_cast<uint8_t>(q[64 * chunk + l] | q[64 * chunk + 32 + l] << 4);
      }
    }
    store_block(dst, b, blk);
  }
}

void dequantize_q5_k(const uint8_t* src, float* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b) {
    const auto blk = load_block<BlockQ5_K>(src, b);
    const float d = fp16_to_fp32(blk.d), dmin = fp16_to_fp32(blk.dmin);
    for (int chunk = 0; chunk < 4; ++chunk) {
      int sc0, m0, sc1, m1;
      unpack_scale_min(blk.scales, 2 * chunk, &sc0, &m0);
      unpack_scale_min(blk.scales, 2 * chunk + 1, &sc1, &m1);
      const float d0 = d * sc0, o0 = dmin * m0, d1 = d * sc1, o1 = dmin * m1;
      const uint8_t* qs = blk.qs + 32 * chunk;
      for (int l = 0; l < 32; ++l) {
        const int hi0 = (blk.qh[l] >> (2 * chunk)) & 1, hi1 = (blk.qh[l] >> (2 * chunk + 1)) & 1;
        dst[l] = d0 * ((qs[l] & 15) | hi0 << 4) - o0;
        dst[32 + l] = d1 * ((qs[l] >> 4) | hi1 << 4) - o1;
      }
      dst += 64;
    }
  }
}

void quantize_q5_k(const float* src, uint8_t* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, src += kSuperBlock) {
    BlockQ5_K blk{};
    uint8_t q[kSuperBlock];
    fit_scale_min_block(src, 31, {-0.5f, 0.1f, 15}, &blk.d, &blk.dmin, blk.scales, q);
    for (int chunk = 0; chunk < 4; ++chunk) {
      for (int l = 0; l < 32; ++l) {
        const int q0 = q[64 * chunk + l], q1 = q[64 * chunk + 32 + l];
        blk.qs[32 * chunk + l] = static_cast<uint8_t>((q0 & 15) | (q1 & 15) << 4);
        blk.qh[l] = static_cast<uint8_t>(blk.qh[l] | (q0 >> 4) << (2 * chunk) |
                                         (q1 >> 4) << (2 * chunk + 1));
      }
    }
    store_block(dst, b, blk);
  }
}

// ---------------------------------------------------------------------------------------------
// Q6_K

void dequantize_q6_k(const uint8_t* src, float* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b) {
    const auto blk = load_block<BlockQ6_K>(src, b);
    const float d = fp16_to_fp32(blk.d);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = blk.ql + 64 * half;
      const uint8_t* qh = blk.qh + 32 * half;
      const int8_t* sc = blk.scales + 8 * half;
      for (int l = 0; l < 32; ++l) {
        const int g = l / 16;
        const int q0 = ((ql[l] & 15) | ((qh[l] >> 0) & 3) << 4) - 32;
        const int q1 = ((ql[l + 32] & 15) | ((qh[l] >> 2) & 3) << 4) - 32;
        const int q2 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
        const int q3 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
        dst[l] = d * sc[g] * q0;
        dst[l + 32] = d * sc[g + 2] * q1;
        dst[l + 64] = d * sc[g + 4] * q2;
        dst[l + 96] = d * sc[g + 6] * q3;
      }
      dst += 128;
    }
  }
}

void quantize_q6_k(const float* src, uint8_t* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, src += kSuperBlock) {
    uint8_t q[kSuperBlock];
    float scales[16];
    float max_scale = 0.0f, amax = 0.0f;
    fit_symmetric_scale<16>(16, src, 32.0f, q, scales);
    for (int g = 0; g < 16; ++g) {
      if (std::fabs(scales[g]) > amax) {
        amax = std::fabs(scales[g]);
        max_scale = scales[g];
      }
    }
    BlockQ6_K blk{};
    if (amax >= kGroupEps) {
      // The largest scale maps to -128 so the int8 range is used fully.
      const float inv = -128.0f / max_scale;
      blk.d = fp32_to_fp16(1.0f / inv);
      for (int g = 0; g < 16; ++g)
        blk.scales[g] = static_cast<int8_t>(clamp_int(round_to_int(inv * scales[g]), -128, 127));
      const float d = fp16_to_fp32(blk.d);
      for (int g = 0; g < 16; ++g) {
        const float dg = d * blk.scales[g];
        if (dg == 0.0f) continue;
        for (int l = 0; l < 16; ++l) {
          q[16 * g + l] =
              static_cast<uint8_t>(clamp_int(round_to_int(src[16 * g + l] / dg), -32, 31) + 32);
        }
      }
    } else {
      std::fill(q, q + kSuperBlock, uint8_t{0});  // d == 0 decodes every level to 0
    }
    for (int half = 0; half < 2; ++half) {
      const uint8_t* l = q + 128 * half;
      uint8_t* ql = blk.ql + 64 * half;
      uint8_t* qh = blk.qh + 32 * half;
      for (int j = 0; j < 32; ++j) {
        ql[j] = static_cast<uint8_t>((l[j] & 15) | (l[j + 64] & 15) << 4);
        ql[j + 32] = static_cast<uint8_t>((l[j + 32] & 15) | (l[j + 96] & 15) << 4);
        qh[j] = static_cast<uint8_t>((l[j] >> 4) | (l[j + 32] >> 4) << 2 | (l[j + 64] >> 4) << 4 |
                                     (l[j + 96] >> 4) << 6);
      }
    }
    store_block(dst, b, blk);
  }
}

// ---------------------------------------------------------------------------------------------
// Q8_K

void dequantize_q8_k(const uint8_t* src, float* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, dst += kSuperBlock) {
    const auto blk = load_block<BlockQ8_K>(src, b);
    for (size_t i = 0; i < kSuperBlock; ++i) dst[i] = blk.d * blk.qs[i];
  }
}

void quantize_q8_k(const float* src, uint8_t* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, src += kSuperBlock) {
    BlockQ8_K blk{};
    float amax = 0.0f, extreme = 0.0f;
    for (size_t i = 0; i < kSuperBlock; ++i) {
      if (std::fabs(src[i]) > amax) {
        amax = std::fabs(src[i]);
        extreme = src[i];
      }
    }
    if (amax != 0.0f) {
      const float inv = -127.0f / extreme;
      for (size_t i = 0; i < kSuperBlock; ++i) {
        blk.qs[i] = static_cast<int8_t>(std::min(127, round_to_int(inv * src[i])));
      }
      for (size_t g = 0; g < 16; ++g) {
        int sum = 0;
        for (size_t l = 0; l < 16; ++l) sum += blk.qs[16 * g + l];
        blk.bsums[g] = static_cast<int16_t>(sum);
      }
      blk.d = 1.0f / inv;
    }
    store_block(dst, b, blk);
  }
}

constexpr FormatKernels kKKernels[] = {
    {TensorType::Q2_K, kSuperBlock, sizeof(BlockQ2_K), dequantize_q2_k, quantize_q2_k},
    {TensorType::Q3_K, kSuperBlock, sizeof(BlockQ3_K), dequantize_q3_k, quantize_q3_k},
    {TensorType::Q4_K, kSuperBlock, sizeof(BlockQ4_K), dequantize_q4_k, quantize_q4_k},
    {TensorType::Q5_K, kSuperBlock, sizeof(BlockQ5_K), dequantize_q5_k, quantize_q5_k},
    {TensorType::Q6_K, kSuperBlock, sizeof(BlockQ6_K), dequantize_q6_k, quantize_q6_k},
    {TensorType::Q8_K, kSuperBlock, sizeof(BlockQ8_K), dequantize_q8_k, quantize_q8_k},
};

}  // namespace

std::span<const FormatKernels> k_kernels() {
  return kKKernels;
}

}  // namespace vkllm::gguf::detail
