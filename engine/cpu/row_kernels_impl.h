// The row kernels' code, compiled once per ISA: each row_kernels_<isa>.cpp defines
// VKLLM_ROW_KERNELS_TABLE and includes this file, and its -m flags let the compiler vectorize the
// loops for that ISA. Everything here has internal linkage (no inline function or template is
// shared between differently compiled files), and it uses no standard-library templates for the
// same reason. Loops keep independent partial sums so they vectorize without -ffast-math.
#ifndef VKLLM_ROW_KERNELS_TABLE
#error "define VKLLM_ROW_KERNELS_TABLE before including row_kernels_impl.h"
#endif

#include <cstdint>
#include <cstring>

#include "engine/cpu/fast_math_impl.h"
#include "engine/cpu/row_kernels.h"
#include "engine/gguf/quants.h"

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace vkllm::cpu::detail {
namespace {

inline float silu(float g) {
  return g / (1.0f + exp_approx(-g));
}
inline VF silu_v(VF g) {
  return g / (1.0f + exp_v(-g));
}

constexpr float kGeluK = 0.7978845608028654f;  // sqrt(2 / pi)
inline float gelu_tanh(float x) {
  return 0.5f * x * (1.0f + tanh_approx(kGeluK * x * (1.0f + 0.044715f * x * x)));
}
inline VF gelu_tanh_v(VF x) {
  return 0.5f * x * (1.0f + tanh_v(kGeluK * x * (1.0f + 0.044715f * x * x)));
}

float sum_squares(const float* __restrict x, uint32_t n) {
  constexpr uint32_t kLanes = 16;
  float acc[kLanes] = {};
  uint32_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (uint32_t j = 0; j < kLanes; ++j) acc[j] += x[i + j] * x[i + j];
  float s = 0.0f;
  for (; i < n; ++i) s += x[i] * x[i];
  for (uint32_t j = 0; j < kLanes; ++j) s += acc[j];
  return s;
}

void rms_norm(const RmsNormArgs& a, uint32_t row_begin, uint32_t row_end) {
  const uint32_t n = a.n, xs = a.x_stride ? a.x_stride : n, ys = a.y_stride ? a.y_stride : n;
  for (uint32_t r = row_begin; r < row_end; ++r) {
    float* x = a.x + uint64_t(r) * xs;
    if (a.residual != nullptr) {
      const float* __restrict res = a.residual + uint64_t(r) * xs;
      float* __restrict xr = x;
      for (uint32_t i = 0; i < n; ++i) xr[i] += res[i];
    }
    const float inv = 1.0f / __builtin_sqrtf(sum_squares(x, n) / float(n) + a.eps);
    float* y = a.y + uint64_t(r) * ys;
    if (y == x) {
      if (a.weight != nullptr) {
        const float* __restrict w = a.weight;
        for (uint32_t i = 0; i < n; ++i) y[i] = y[i] * inv * w[i];
      } else {
        for (uint32_t i = 0; i < n; ++i) y[i] *= inv;
      }
    } else {
      const float* __restrict xr = x;
      float* __restrict yr = y;
      if (a.weight != nullptr) {
        const float* __restrict w = a.weight;
        for (uint32_t i = 0; i < n; ++i) yr[i] = xr[i] * inv * w[i];
      } else {
        for (uint32_t i = 0; i < n; ++i) yr[i] = xr[i] * inv;
      }
    }
  }
}

// Whole vectors, then a scalar tail; each chunk is loaded before it is stored, so out may alias
// gate or up.
template <typename ActV, typename Act>
void glu_row(const float* gate, const float* up, float* out, uint32_t n, ActV act_v, Act act) {
  uint32_t i = 0;
  for (; i + W <= n; i += W) storev(out + i, act_v(loadv(gate + i)) * loadv(up + i));
  for (; i < n; ++i) out[i] = act(gate[i]) * up[i];
}

void glu(const GluArgs& a, uint32_t row_begin, uint32_t row_end) {
  const uint32_t n = a.n;
  const uint32_t gs = a.gate_stride ? a.gate_stride : n, us = a.up_stride ? a.up_stride : n,
                 os = a.out_stride ? a.out_stride : n;
  for (uint32_t r = row_begin; r < row_end; ++r) {
    const float* g = a.gate + uint64_t(r) * gs;
    const float* u = a.up + uint64_t(r) * us;
    float* o = a.out + uint64_t(r) * os;
    if (a.act == GluActivation::Silu)
      glu_row(
          g, u, o, n, [](VF x) { return silu_v(x); }, [](float x) { return silu(x); });
    else
      glu_row(
          g, u, o, n, [](VF x) { return gelu_tanh_v(x); }, [](float x) { return gelu_tanh(x); });
  }
}

// Unary op with a vector form (for the transcendental ones): whole vectors, then a scalar tail.
template <typename FV, typename F>
void map_vector(const float* a, float* out, uint32_t begin, uint32_t end, FV fv, F f) {
  uint32_t i = begin;
  for (; i + W <= end; i += W) storev(out + i, fv(loadv(a + i)));
  for (; i < end; ++i) out[i] = f(a[i]);
}

template <typename F>
void map_unary(const float* a, float* out, uint32_t begin, uint32_t end, F f) {
  if (a == out) {
    float* __restrict p = out;
    for (uint32_t i = begin; i < end; ++i) p[i] = f(p[i]);
  } else {
    const float* __restrict pa = a;
    float* __restrict po = out;
    for (uint32_t i = begin; i < end; ++i) po[i] = f(pa[i]);
  }
}

template <typename F>
void map_binary(const float* a, const float* b, float* out, uint32_t begin, uint32_t end, F f) {
  if (b == out) {  // rare (out aliases the second operand): no vectorization promises
    for (uint32_t i = begin; i < end; ++i) out[i] = f(a[i], b[i]);
  } else if (a == out) {
    float* __restrict p = out;
    const float* __restrict pb = b;
    for (uint32_t i = begin; i < end; ++i) p[i] = f(p[i], pb[i]);
  } else {
    const float* __restrict pa = a;
    const float* __restrict pb = b;
    float* __restrict po = out;
    for (uint32_t i = begin; i < end; ++i) po[i] = f(pa[i], pb[i]);
  }
}

void elementwise(ElementOp op, const float* a, const float* b, float* out, float s, uint32_t begin,
                 uint32_t end) {
  switch (op) {
    case ElementOp::Add:
      map_binary(a, b, out, begin, end, [](float x, float y) { return x + y; });
      break;
    case ElementOp::Mul:
      map_binary(a, b, out, begin, end, [](float x, float y) { return x * y; });
      break;
    case ElementOp::Scale:
      map_unary(a, out, begin, end, [s](float x) { return x * s; });
      break;
    case ElementOp::Softcap: {
      const float inv = 1.0f / s;
      map_vector(
          a, out, begin, end, [s, inv](VF x) { return s * tanh_v(x * inv); },
          [s, inv](float x) { return s * tanh_approx(x * inv); });
      break;
    }
    case ElementOp::Gelu:
      map_vector(
          a, out, begin, end, [](VF x) { return gelu_tanh_v(x); },
          [](float x) { return gelu_tanh(x); });
      break;
  }
}

void add_bias(float* x, const float* bias, uint32_t n, uint32_t stride, uint32_t row_begin,
              uint32_t row_end) {
  const uint32_t s = stride ? stride : n;
  const float* __restrict b = bias;
  for (uint32_t r = row_begin; r < row_end; ++r) {
    float* __restrict xr = x + uint64_t(r) * s;
    for (uint32_t i = 0; i < n; ++i) xr[i] += b[i];
  }
}

void rope_row(const float* src, float* dst, const float* cs, uint32_t head_dim, uint32_t n_dims,
              bool neox) {
  float tmp[kMaxHeadDim];
  std::memcpy(tmp, src, head_dim * sizeof(float));
  const uint32_t half = n_dims / 2;
  const float* __restrict c = cs;
  const float* __restrict s = cs + half;
  const float* __restrict t = tmp;
  float* __restrict d = dst;
  if (neox) {
    for (uint32_t i = 0; i < half; ++i) {
      d[i] = t[i] * c[i] - t[i + half] * s[i];
      d[i + half] = t[i] * s[i] + t[i + half] * c[i];
    }
  } else {
    for (uint32_t i = 0; i < half; ++i) {
      d[2 * i] = t[2 * i] * c[i] - t[2 * i + 1] * s[i];
      d[2 * i + 1] = t[2 * i] * s[i] + t[2 * i + 1] * c[i];
    }
  }
  for (uint32_t i = n_dims; i < head_dim; ++i) d[i] = t[i];
}

void to_f16(const float* src, uint16_t* dst, uint32_t n) {
  uint32_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(dst + i),
        _mm512_maskz_cvtps_ph(0xFFFF, _mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
#endif
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  for (; i < n; ++i) dst[i] = gguf::fp32_to_fp16(src[i]);
}

// A vector pass for the maximum (NaN compares false and is skipped), then the first index that
// holds it.
uint32_t argmax(const float* row, uint32_t n) {
  VF mv = splat(-__builtin_inff());
  uint32_t i = 0;
  for (; i + W <= n; i += W) {
    const VF x = loadv(row + i);
    mv = x > mv ? x : mv;
  }
  float best = -__builtin_inff();
  for (uint32_t j = 0; j < W; ++j) best = mv[j] > best ? mv[j] : best;
  for (; i < n; ++i) best = row[i] > best ? row[i] : best;
  for (i = 0; i < n; ++i)
    if (row[i] == best) return i;
  return 0;  // every value NaN
}

}  // namespace

extern const RowKernels VKLLM_ROW_KERNELS_TABLE;
const RowKernels VKLLM_ROW_KERNELS_TABLE = {
    rms_norm, glu, elementwise, add_bias, rope_row, to_f16, argmax,
};

}  // namespace vkllm::cpu::detail
