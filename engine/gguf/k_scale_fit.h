// The K-quant scale searches: fitting each group's scale (and offset) the way llama.cpp's
// reference quantizers do, several groups at a time in SIMD lanes. quants_k.cpp packs the
// results into the Q2_K..Q6_K block layouts; this header only fits numbers. Internal to gguf/.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "engine/gguf/quants_detail.h"

namespace vkllm::gguf::detail {

// Below this a group counts as all-zero (matches ggml's GROUP_MAX_EPS).
inline constexpr float kGroupEps = 1e-15f;

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
inline void to_lanes(const float* x, Lanes* out) {
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
inline float fit_q3_scale(const float* x, int n, int qmax, uint8_t* q) {
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

}  // namespace vkllm::gguf::detail
