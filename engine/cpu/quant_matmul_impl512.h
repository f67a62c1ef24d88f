// Internal: the 512-bit row kernels of quant_matmul for CPUs with AVX-512 VNNI (Q4_K, Q5_K, Q6_K,
// Q8_0, F16). One zmm holds 64 consecutive elements, so the activations are read as they lie and
// each instruction does twice the work of the 256-bit body. Include only from
// quant_matmul_avx512.cpp.
#pragma once

#ifndef VKLLM_QMM_VNNI
#error "quant_matmul_impl512.h needs VKLLM_QMM_VNNI (AVX-512 VNNI compile flags)"
#endif

#include "engine/cpu/quant_matmul_impl.h"

namespace vkllm::cpu::detail {
namespace {

inline float hsum512(__m512 v) {
  return _mm512_reduce_add_ps(v);
}

template <unsigned NT>
void q4_k_512_row(const std::byte* row, uint64_t cols, const std::byte* x, uint64_t xs,
                  float* out) {
  const uint64_t nb = cols / gguf::kSuperBlock;
  const auto* w = reinterpret_cast<const BlockQ4_K*>(row);
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  // Low 256 bits: the low nibbles (group 2c), high 256: the high nibbles (group 2c + 1).
  const __m512i nibble_shift = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1);
  __m512 acc[NT];
  __m256 acc_min[NT];
  for (unsigned t = 0; t < NT; ++t) {
    acc[t] = _mm512_setzero_ps();
    acc_min[t] = _mm256_setzero_ps();
  }
  for (uint64_t b = 0; b < nb; ++b, ++w) {
    const __m128i packed = unpack_k4_scales(w->scales);
    const __m512i scales = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(packed));
    const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(packed, packed));
    const float d = half(w->d), dmin = half(w->dmin);
    __m512i isum[NT];
    for (unsigned t = 0; t < NT; ++t) isum[t] = _mm512_setzero_si512();
    for (int c = 0; c < 4; ++c) {
      const __m512i q = _mm512_broadcast_i64x4(load(w->qs + 32 * c));
      const __m512i v = _mm512_and_si512(_mm512_srlv_epi16(q, nibble_shift), m4);
      const __m512i s = _mm512_shuffle_epi8(
          scales,
          _mm512_inserti64x4(_mm512_castsi256_si512(pick_word(2 * c)), pick_word(2 * c + 1), 1));
      for (unsigned t = 0; t < NT; ++t) {
        const int8_t* xq = act_row<ActQ8K>(x, xs, t)[b].qs + 64 * c;
        isum[t] = _mm512_dpwssd_epi32(isum[t], _mm512_maddubs_epi16(v, _mm512_loadu_si512(xq)), s);
      }
    }
    for (unsigned t = 0; t < NT; ++t) {
      const ActQ8K& xb = act_row<ActQ8K>(x, xs, t)[b];
      const __m256i msum = _mm256_madd_epi16(load(xb.bsums), mins16);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_set1_ps(d * xb.d), acc[t]);
      acc_min[t] =
          _mm256_fmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_set1_ps(dmin * xb.d), acc_min[t]);
    }
  }
  for (unsigned t = 0; t < NT; ++t) out[t] = hsum512(acc[t]) - hsum(acc_min[t]);
}

template <unsigned NT>
void q5_k_512_row(const std::byte* row, uint64_t cols, const std::byte* x, uint64_t xs,
                  float* out) {
  const uint64_t nb = cols / gguf::kSuperBlock;
  const auto* w = reinterpret_cast<const BlockQ5_K*>(row);
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m512i bit = _mm512_set1_epi8(0x01);
  const __m512i nibble_shift = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1);
  // Chunk c: the fifth bit of the low nibbles is bit 2c of qh, of the high nibbles bit 2c + 1.
  __m512i qh_shift[4];
  for (int c = 0; c < 4; ++c) {
    qh_shift[c] = _mm512_inserti64x4(_mm512_set1_epi16(static_cast<int16_t>(2 * c)),
                                     _mm256_set1_epi16(static_cast<int16_t>(2 * c + 1)), 1);
  }
  __m512 acc[NT];
  __m256 acc_min[NT];
  for (unsigned t = 0; t < NT; ++t) {
    acc[t] = _mm512_setzero_ps();
    acc_min[t] = _mm256_setzero_ps();
  }
  for (uint64_t b = 0; b < nb; ++b, ++w) {
    const __m128i packed = unpack_k4_scales(w->scales);
    const __m512i scales = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(packed));
    const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(packed, packed));
    const float d = half(w->d), dmin = half(w->dmin);
    const __m512i qh = _mm512_broadcast_i64x4(load(w->qh));
    __m512i isum[NT];
    for (unsigned t = 0; t < NT; ++t) isum[t] = _mm512_setzero_si512();
    for (int c = 0; c < 4; ++c) {
      const __m512i q = _mm512_broadcast_i64x4(load(w->qs + 32 * c));
      const __m512i hi =
          _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, qh_shift[c]), bit), 4);
      const __m512i v =
          _mm512_or_si512(_mm512_and_si512(_mm512_srlv_epi16(q, nibble_shift), m4), hi);
      const __m512i s = _mm512_shuffle_epi8(
          scales,
          _mm512_inserti64x4(_mm512_castsi256_si512(pick_word(2 * c)), pick_word(2 * c + 1), 1));
      for (unsigned t = 0; t < NT; ++t) {
        const int8_t* xq = act_row<ActQ8K>(x, xs, t)[b].qs + 64 * c;
        isum[t] = _mm512_dpwssd_epi32(isum[t], _mm512_maddubs_epi16(v, _mm512_loadu_si512(xq)), s);
      }
    }
    for (unsigned t = 0; t < NT; ++t) {
      const ActQ8K& xb = act_row<ActQ8K>(x, xs, t)[b];
      const __m256i msum = _mm256_madd_epi16(load(xb.bsums), mins16);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_set1_ps(d * xb.d), acc[t]);
      acc_min[t] =
          _mm256_fmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_set1_ps(dmin * xb.d), acc_min[t]);
    }
  }
  for (unsigned t = 0; t < NT; ++t) out[t] = hsum512(acc[t]) - hsum(acc_min[t]);
}

// Q8_0 against the unsigned planar activations: two blocks per zmm. (q + 128) . w = q . w + 128
// sum(w), so each lane starts from -128 * its weights' sum (one vpdpbusd per weight pair, shared
// by the tokens) and the products need no sign juggling; the two blocks' scales multiply as one
// vector.
template <unsigned NT>
void q8_0_512_row(const std::byte* row, uint64_t cols, const std::byte* x, uint64_t xs,
                  float* out) {
  const uint64_t nb = cols / gguf::kLegacyBlock;
  const uint64_t scales_at = act_q8_0u_scales_offset(cols);
  const auto* w = reinterpret_cast<const BlockQ8_0*>(row);
  const __m512i k128 = _mm512_set1_epi8(static_cast<char>(0x80));
  const __m512i pair_idx = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi32(1), 1);
  __m512 acc[NT];
  for (unsigned t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  uint64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    const __m512i wz =
        _mm512_inserti64x4(_mm512_castsi256_si512(load(w[b].qs)), load(w[b + 1].qs), 1);
    const __m512i start = _mm512_sub_epi32(_mm512_setzero_si512(),
                                           _mm512_dpbusd_epi32(_mm512_setzero_si512(), k128, wz));
    const __m512 dw =
        _mm512_insertf32x8(_mm512_set1_ps(half(w[b].d)), _mm256_set1_ps(half(w[b + 1].d)), 1);
    for (unsigned t = 0; t < NT; ++t) {
      const std::byte* xt = x + t * xs;
      const __m512i p = _mm512_dpbusd_epi32(start, _mm512_loadu_si512(xt + 32 * b), wz);
      const float* d = reinterpret_cast<const float*>(xt + scales_at) + b;
      const __m512 dx = _mm512_permutexvar_ps(
          pair_idx,
          _mm512_castps128_ps512(_mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(d)))));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dw, dx), acc[t]);
    }
  }
  float tail[NT] = {};
  if (b < nb) {
    const __m256i wv = load(w[b].qs);
    const __m256i start = _mm256_sub_epi32(
        _mm256_setzero_si256(),
        _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm512_castsi512_si256(k128), wv));
    const float dw = half(w[b].d);
    for (unsigned t = 0; t < NT; ++t) {
      const std::byte* xt = x + t * xs;
      const __m256i p = _mm256_dpbusd_epi32(start, load(xt + 32 * b), wv);
      tail[t] =
          hsum(_mm256_cvtepi32_ps(p)) * dw * reinterpret_cast<const float*>(xt + scales_at)[b];
    }
  }
  for (unsigned t = 0; t < NT; ++t) out[t] = hsum512(acc[t]) + tail[t];
}

// Scale index of each int16 lane: 128-bit lane j of the A (B) vector of half h uses scale
// 8h + j (8h + 4 + j). A plain array: no library code may be instantiated in this file.
struct Q6ScalePick {
  int16_t idx[4][32];
};
constexpr Q6ScalePick q6_scale_pick() {
  Q6ScalePick p{};
  for (int h = 0; h < 2; ++h) {
    for (int i = 0; i < 32; ++i) {
      p.idx[2 * h][i] = static_cast<int16_t>(8 * h + i / 8);
      p.idx[2 * h + 1][i] = static_cast<int16_t>(8 * h + 4 + i / 8);
    }
  }
  return p;
}
constexpr Q6ScalePick kQ6ScalePick = q6_scale_pick();

template <unsigned NT>
void q6_k_512_row(const std::byte* row, uint64_t cols, const std::byte* x, uint64_t xs,
                  float* out) {
  const uint64_t nb = cols / gguf::kSuperBlock;
  const auto* w = reinterpret_cast<const BlockQ6_K*>(row);
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m512i m30 = _mm512_set1_epi8(0x30);
  // Per 256-bit half: where the two high bits of the element sit in qh, moved to bits 4-5.
  const __m512i shl_a = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
  const __m512i shr_b = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
  __m512i pick[4];
  for (int k = 0; k < 4; ++k) pick[k] = _mm512_loadu_si512(kQ6ScalePick.idx[k]);
  __m512 acc[NT];
  for (unsigned t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  for (uint64_t b = 0; b < nb; ++b, ++w) {
    const __m256i sc16 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w->scales)));
    const __m512i sc512 = _mm512_castsi256_si512(sc16);
    const float d = half(w->d);
    __m512i isum[NT];
    for (unsigned t = 0; t < NT; ++t) isum[t] = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h) {
      const __m512i ql = _mm512_loadu_si512(w->ql + 64 * h);
      const __m512i qh = _mm512_broadcast_i64x4(load(w->qh + 32 * h));
      // Elements 128h + 0..63 (A) and 128h + 64..127 (B).
      const __m512i a = _mm512_or_si512(_mm512_and_si512(ql, m4),
                                        _mm512_and_si512(_mm512_sllv_epi16(qh, shl_a), m30));
      const __m512i bq = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),
                                         _mm512_and_si512(_mm512_srlv_epi16(qh, shr_b), m30));
      const __m512i sa = _mm512_permutexvar_epi16(pick[2 * h], sc512);
      const __m512i sb = _mm512_permutexvar_epi16(pick[2 * h + 1], sc512);
      for (unsigned t = 0; t < NT; ++t) {
        const int8_t* xq = act_row<ActQ8K>(x, xs, t)[b].qs + 128 * h;
        isum[t] = _mm512_dpwssd_epi32(isum[t], _mm512_maddubs_epi16(a, _mm512_loadu_si512(xq)), sa);
        isum[t] =
            _mm512_dpwssd_epi32(isum[t], _mm512_maddubs_epi16(bq, _mm512_loadu_si512(xq + 64)), sb);
      }
    }
    for (unsigned t = 0; t < NT; ++t) {
      const ActQ8K& xb = act_row<ActQ8K>(x, xs, t)[b];
      const __m256i bias = _mm256_madd_epi16(load(xb.bsums), sc16);
      // 8 lanes of -32 * bias folded into the low half of the 16-lane sum.
      const __m512i total =
          _mm512_sub_epi32(isum[t], _mm512_castsi256_si512(_mm256_slli_epi32(bias, 5)));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total), _mm512_set1_ps(d * xb.d), acc[t]);
    }
  }
  for (unsigned t = 0; t < NT; ++t) out[t] = hsum512(acc[t]);
}

template <unsigned NT>
void f16_512_row(const std::byte* row, uint64_t cols, const std::byte* x, uint64_t xs, float* out) {
  const auto* w = reinterpret_cast<const uint16_t*>(row);
  __m512 acc0[NT], acc1[NT];
  for (unsigned t = 0; t < NT; ++t) acc0[t] = acc1[t] = _mm512_setzero_ps();
  uint64_t i = 0;
  for (; i + 32 <= cols; i += 32) {
    const __m512 w0 = _mm512_cvtph_ps(load(w + i));
    const __m512 w1 = _mm512_cvtph_ps(load(w + i + 16));
    for (unsigned t = 0; t < NT; ++t) {
      const float* xt = act_row<float>(x, xs, t) + i;
      acc0[t] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(xt), acc0[t]);
      acc1[t] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(xt + 16), acc1[t]);
    }
  }
  for (; i + 16 <= cols; i += 16) {
    const __m512 w0 = _mm512_cvtph_ps(load(w + i));
    for (unsigned t = 0; t < NT; ++t) {
      acc0[t] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(act_row<float>(x, xs, t) + i), acc0[t]);
    }
  }
  for (unsigned t = 0; t < NT; ++t) {
    float s = hsum512(_mm512_add_ps(acc0[t], acc1[t]));
    const float* xt = act_row<float>(x, xs, t);
    for (uint64_t j = i; j < cols; ++j) s += half(w[j]) * xt[j];
    out[t] = s;
  }
}

template <unsigned NT>
void f16_512_tile4(const std::byte* row, uint64_t row_stride, uint64_t cols, const std::byte* x,
                   uint64_t xs, float* out) {
  const uint16_t* w[4];
  for (unsigned r = 0; r < 4; ++r) w[r] = reinterpret_cast<const uint16_t*>(row + r * row_stride);
  __m512 acc[4][NT];
  for (unsigned r = 0; r < 4; ++r)
    for (unsigned t = 0; t < NT; ++t) acc[r][t] = _mm512_setzero_ps();
  uint64_t i = 0;
  for (; i + 16 <= cols; i += 16) {
    __m512 xv[NT];
    for (unsigned t = 0; t < NT; ++t) xv[t] = _mm512_loadu_ps(act_row<float>(x, xs, t) + i);
    for (unsigned r = 0; r < 4; ++r) {
      const __m512 wv = _mm512_cvtph_ps(load(w[r] + i));
      for (unsigned t = 0; t < NT; ++t) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  for (unsigned r = 0; r < 4; ++r) {
    for (unsigned t = 0; t < NT; ++t) {
      float s = hsum512(acc[r][t]);
      const float* xt = act_row<float>(x, xs, t);
      for (uint64_t j = i; j < cols; ++j) s += half(w[r][j]) * xt[j];
      out[4 * r + t] = s;
    }
  }
}

void f16_512_tile(const std::byte* row, uint64_t row_stride, uint64_t cols, const std::byte* x,
                  uint64_t xs, unsigned ntok, float* out) {
  switch (ntok) {
    case 1:
      return f16_512_tile4<1>(row, row_stride, cols, x, xs, out);
    case 2:
      return f16_512_tile4<2>(row, row_stride, cols, x, xs, out);
    case 3:
      return f16_512_tile4<3>(row, row_stride, cols, x, xs, out);
    default:
      return f16_512_tile4<4>(row, row_stride, cols, x, xs, out);
  }
}
VKLLM_QMM_BODY(q4_k_512)
VKLLM_QMM_BODY(q5_k_512)
VKLLM_QMM_BODY(q6_k_512)
VKLLM_QMM_BODY(q8_0_512)
VKLLM_QMM_BODY(f16_512)

}  // namespace
}  // namespace vkllm::cpu::detail
