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
#include "engine/gguf/quants.h"
#include "engine/gguf/quants_detail.h"

namespace vkllm::gguf::detail {
namespace {

// Below this a group counts as all-zero (matches ggml's GROUP_MAX_EPS).
constexpr float kGroupEps = 1e-15f;

// ---------------------------------------------------------------------------------------------
// Scale searches.

struct GridSearch {
  float rmin;    // first candidate offset added to qmax
  float rdelta;  // offset step between candidates
  int steps;     // candidates after the first: rmin, rmin + rdelta, ..., rmin + steps * rdelta
};

// The searches below fit G groups of N elements at once: lane g of each vector holds group g
// (GCC/Clang vector extensions, which map onto whatever SIMD the target has). Each lane does
// exactly the arithmetic of a one-group search in the same order, so results are bit-identical
// to it; running groups side by side hides the latency of the sequential sums. Inputs and
// outputs are in block order: group g's element i is at [g * N + i].
// Four lanes are one SSE / NEON register, so there is no ABI or emulation cost on any target.
constexpr int G = 4;
typedef float Lanes __attribute__((vector_size(G * sizeof(float))));
static_assert(sizeof(Lanes) == G * sizeof(float));

// Round half to even per lane, exact for |v| < 2^22.
template <typename V>
inline V round_even(V v) {
  return (v + 12582912.0f) - 12582912.0f;
}
// Clamps each lane to [lo, hi]; NaN maps to lo.
template <typename V>
inline V clamp_lanes(V v, V lo, V hi) {
  v = v > lo ? v : lo;
  return v < hi ? v : hi;
}

template <int N>
void to_lanes(const float* x, Lanes* out) {
  float t[N][G];
  for (int g = 0; g < G; ++g) {
    for (int i = 0; i < N; ++i) t[i][g] = x[g * N + i];
  }
  std::memcpy(out, t, sizeof(t));
}

struct LaneArray {
  float v[G];
  explicit LaneArray(Lanes lanes) { std::memcpy(v, &lanes, sizeof(v)); }
  float operator[](int g) const { return v[g]; }
};

// Fits x ~= scale * q - offset per group with q in [0, qmax] and offset >= 0, minimising the
// weighted squared (or, with AbsoluteError, absolute) error: start from the range-derived
// scale, then try a grid of inverse scales, refitting scale and offset by least squares on each
// candidate's levels and keeping the best. Writes the levels to q and returns scales and offsets.
template <int N, bool AbsoluteError>
void fit_scale_offset_lanes(const float* x, const float* w, float qmax, GridSearch grid, uint8_t* q,
                            float* scale_out, float* offset_out) {
  using V = Lanes;
  const V zero = {};
  const V vqmax = zero + qmax;
  V xt[N], wt[N], best_q[N], trial[N];
  to_lanes<N>(x, xt);
  to_lanes<N>(w, wt);
  V lo = xt[0], hi = xt[0], sum_w = wt[0], sum_wx = wt[0] * xt[0];
  for (int i = 1; i < N; ++i) {
    lo = xt[i] < lo ? xt[i] : lo;
    hi = xt[i] > hi ? xt[i] : hi;
    sum_w += wt[i];
    sum_wx += wt[i] * xt[i];
  }
  lo = lo > zero ? zero : lo;  // the offset only shifts down: positive data uses levels from 0
  const auto flat = hi == lo;  // such groups are represented by the offset alone
  const V flat_offset = -lo;

  auto error_term = [&](V diff) {
    if constexpr (AbsoluteError) {
      return diff < zero ? -diff : diff;
    } else {
      return diff * diff;
    }
  };
  V inv = qmax / (hi - lo);  // Inf/NaN in flat lanes, which are overridden at the end
  V scale = 1.0f / inv;
  V best_err = zero;
  for (int i = 0; i < N; ++i) {
    best_q[i] = round_even(clamp_lanes(inv * (xt[i] - lo), zero, vqmax));
    best_err += wt[i] * error_term(scale * best_q[i] + lo - xt[i]);
  }

  for (int step = 0; step <= grid.steps; ++step) {
    // Candidates are taken relative to the best offset found so far (as llama.cpp does), so
    // the search drifts towards the least-squares solution.
    inv = (grid.rmin + grid.rdelta * static_cast<float>(step) + qmax) / (hi - lo);
    V sum_l = zero, sum_l2 = zero, sum_xl = zero;
    for (int i = 0; i < N; ++i) {
      const V l = round_even(clamp_lanes(inv * (xt[i] - lo), zero, vqmax));
      trial[i] = l;
      sum_l += wt[i] * l;
      sum_l2 += wt[i] * l * l;
      sum_xl += wt[i] * l * xt[i];
    }
    // Closed-form weighted least squares for x ~= a * l + b over the trial levels.
    const V det = sum_w * sum_l2 - sum_l * sum_l;
    V a = (sum_w * sum_xl - sum_wx * sum_l) / det;
    V b = (sum_l2 * sum_wx - sum_l * sum_xl) / det;
    const auto positive = b > zero;  // not representable: refit through the origin
    a = positive ? sum_xl / sum_l2 : a;
    b = positive ? zero : b;
    V err = zero;
    for (int i = 0; i < N; ++i) err += wt[i] * error_term(a * trial[i] + b - xt[i]);
    const auto take = (det > zero) & (err < best_err);
    best_err = take ? err : best_err;
    scale = take ? a : scale;
    lo = take ? b : lo;
    for (int i = 0; i < N; ++i) best_q[i] = take ? trial[i] : best_q[i];
  }
  const LaneArray offsets(flat ? flat_offset : -lo), scales(flat ? zero : scale);
  const LaneArray is_flat(flat ? zero + 1.0f : zero);
  for (int g = 0; g < G; ++g) {
    offset_out[g] = offsets[g];
    scale_out[g] = scales[g];
  }
  for (int i = 0; i < N; ++i) {
    const LaneArray level(best_q[i]);
    for (int g = 0; g < G; ++g)
      q[g * N + i] = is_flat[g] != 0.0f ? uint8_t{0} : static_cast<uint8_t>(level[g]);
  }
}

// Fits x ~= scale * (q - qmax) per group with q in [0, 2 qmax - 1], weighting each element by
// x^2 (large values matter most), searching inverse scales around qmax / max|x|.
template <int N>
void fit_symmetric_scale_lanes(const float* x, float qmax, uint8_t* q, float* scale_out) {
  using V = Lanes;
  const V zero = {};
  const V low = zero - qmax, high = zero + (qmax - 1.0f);
  V xt[N], best_q[N], trial[N];
  to_lanes<N>(x, xt);
  V amax = zero, extreme = zero;
  for (int i = 0; i < N; ++i) {
    const V ax = xt[i] < zero ? -xt[i] : xt[i];
    const auto larger = ax > amax;
    amax = larger ? ax : amax;
    extreme = larger ? xt[i] : extreme;
  }
  // The extreme value maps to -qmax so the asymmetric integer range is used fully.
  V inv = -qmax / extreme;
  V sum_lx = zero, sum_l2 = zero;
  for (int i = 0; i < N; ++i) {
    const V w = xt[i] * xt[i];
    best_q[i] = round_even(clamp_lanes(inv * xt[i], low, high));
    sum_lx += w * xt[i] * best_q[i];
    sum_l2 += w * best_q[i] * best_q[i];
  }
  // For the least-squares scale the weighted error is sum(w x^2) - sum_lx^2 / sum_l2, so a
  // larger sum_lx^2 / sum_l2 is better.
  V scale = sum_l2 > zero ? sum_lx / sum_l2 : zero;
  V best = scale * sum_lx;
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    inv = -(qmax + 0.1f * static_cast<float>(step)) / extreme;
    sum_lx = sum_l2 = zero;
    for (int i = 0; i < N; ++i) {
      const V w = xt[i] * xt[i];
      trial[i] = round_even(clamp_lanes(inv * xt[i], low, high));
      sum_lx += w * xt[i] * trial[i];
      sum_l2 += w * trial[i] * trial[i];
    }
    const auto take = (sum_l2 > zero) & (sum_lx * sum_lx > best * sum_l2);
    scale = take ? sum_lx / sum_l2 : scale;
    best = take ? scale * sum_lx : best;
    for (int i = 0; i < N; ++i) best_q[i] = take ? trial[i] : best_q[i];
  }
  const auto zero_group = amax < kGroupEps;  // no scale, all levels 0
  const LaneArray scales(zero_group ? zero : scale);
  for (int g = 0; g < G; ++g) scale_out[g] = scales[g];
  for (int i = 0; i < N; ++i) {
    const LaneArray level(zero_group ? zero : best_q[i] + qmax);
    for (int g = 0; g < G; ++g) q[g * N + i] = static_cast<uint8_t>(level[g]);
  }
}

// Fits `groups` (a multiple of G) consecutive groups of N elements.
template <int N, bool AbsoluteError>
void fit_scale_offset(int groups, const float* x, const float* w, float qmax, GridSearch grid,
                      uint8_t* q, float* scales, float* offsets) {
  for (int g = 0; g < groups; g += G) {
    fit_scale_offset_lanes<N, AbsoluteError>(x + g * N, w + g * N, qmax, grid, q + g * N,
                                             scales + g, offsets + g);
  }
}

template <int N>
void fit_symmetric_scale(int groups, const float* x, float qmax, uint8_t* q, float* scales) {
  for (int g = 0; g < groups; g += G)
    fit_symmetric_scale_lanes<N>(x + g * N, qmax, q + g * N, scales + g);
}

// Symmetric fit for 3-bit groups: after the initial rounding, repeatedly move single elements to
// the level that is optimal given the others (coordinate descent on the x^2-weighted error).
float fit_q3_scale(const float* x, int n, int qmax, uint8_t* q) {
  float amax = 0.0f, extreme = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      extreme = x[i];
    }
  }
  if (amax < kGroupEps) {
    std::fill(q, q + n, uint8_t{0});
    return 0.0f;
  }
  const float inv_scale = -qmax / extreme;
  int levels[kSuperBlock];
  float sum_lx = 0.0f, sum_l2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    levels[i] = clamp_int(round_to_int(inv_scale * x[i]), -qmax, qmax - 1);
    const float w = x[i] * x[i];
    sum_lx += w * x[i] * levels[i];
    sum_l2 += w * levels[i] * levels[i];
  }
  for (int pass = 0; pass < 5; ++pass) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float lx = sum_lx - w * x[i] * levels[i];
      if (lx <= 0.0f) continue;
      float l2 = sum_l2 - w * levels[i] * levels[i];
      const int candidate = clamp_int(round_to_int(x[i] * l2 / lx), -qmax, qmax - 1);
      if (candidate == levels[i]) continue;
      lx += w * x[i] * candidate;
      l2 += w * candidate * candidate;
      // Accept if the explained energy lx^2 / l2 grows.
      if (l2 > 0.0f && lx * lx * sum_l2 > sum_lx * sum_lx * l2) {
        levels[i] = candidate;
        sum_lx = lx;
        sum_l2 = l2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) q[i] = static_cast<uint8_t>(levels[i] + qmax);
  return sum_l2 > 0.0f ? sum_lx / sum_l2 : 0.0f;
}

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
