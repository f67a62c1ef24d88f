// Internal: the x86 row kernels of quant_matmul on 256-bit vectors, compiled twice:
// quant_matmul_avx2.cpp (AVX2 + FMA + F16C) and, through quant_matmul_impl512.h,
// quant_matmul_avx512.cpp, which defines VKLLM_QMM_VNNI and gets the AVX-512 VNNI forms of the
// int8 dot products (vpdpbusd, vpdpwssd) that fold the widening adds of the AVX2 sequence into
// one instruction. Include only from those.
//
// Every kernel keeps the integer sums of a block in int32 lanes, converts them to float once per
// block (scale of weights times scale of activations), and reduces across lanes once per row.
// A kernel call handles one weight row against up to four token rows, so each weight block is
// loaded and unpacked once for all of them (the prefill reuse; decode calls with one token).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "engine/cpu/quant_matmul_kernels.h"

namespace vkllm::cpu::detail {
namespace {

using gguf::BlockQ4_0;
using gguf::BlockQ4_K;
using gguf::BlockQ5_K;
using gguf::BlockQ6_K;
using gguf::BlockQ8_0;

// acc + the sum of each lane's four u8 x s8 products.
inline __m256i dot_u8s8(__m256i acc, __m256i u, __m256i s) {
#ifdef VKLLM_QMM_VNNI
  return _mm256_dpbusd_epi32(acc, u, s);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}

// acc + each lane's four u8 x s8 products, each pair weighted by the int16 lane of sc16 (one
// scale per 16-element half in the K-quant kernels). The u8 x s8 pair sums fit in int16 for
// every weight here (at most 2 * 63 * 127).
inline __m256i dot_u8s8_scaled(__m256i acc, __m256i u, __m256i s, __m256i sc16) {
#ifdef VKLLM_QMM_VNNI
  return _mm256_dpwssd_epi32(acc, _mm256_maddubs_epi16(u, s), sc16);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), sc16));
#endif
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float half(uint16_t h) {
  return _cvtsh_ss(h);
}

inline __m256i load(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// int16 lanes 0-7 = a, 8-15 = b.
inline __m256i scale_pair(int a, int b) {
  return _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(b)),
                          _mm_set1_epi16(static_cast<int16_t>(a)));
}

template <typename Act>
inline const Act* act_row(const std::byte* x, uint64_t stride, unsigned t) {
  return reinterpret_cast<const Act*>(x + t * stride);
}

// The eight 6-bit scales (bytes 0-7) and mins (bytes 8-15) of a Q4_K / Q5_K super-block, from
// its 12 packed bytes, in vector registers: groups 0-3 keep the low 6 bits of bytes 0-3 (scales)
// and 4-7 (mins); groups 4-7 take a nibble of bytes 8-11 and the top two bits of bytes 0-3
// (scales) or 4-7 (mins). Reads 16 bytes: the 12 are followed by the block's quants.
inline __m128i unpack_k4_scales(const uint8_t* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i low = _mm_and_si128(v, _mm_set1_epi32(0x3f3f3f3f));  // sc 0-3, mins 0-3
  // Nibbles of bytes 8-11: low ones for scales 4-7, high ones for mins 4-7.
  const __m128i nib = _mm_and_si128(
      _mm_srlv_epi32(_mm_shuffle_epi32(v, _MM_SHUFFLE(2, 2, 2, 2)), _mm_setr_epi32(0, 4, 0, 0)),
      _mm_set1_epi32(0x0f0f0f0f));
  const __m128i top =
      _mm_slli_epi32(_mm_and_si128(_mm_srli_epi32(v, 6), _mm_set1_epi32(0x03030303)), 4);
  // [sc 0-3, mins 0-3] and [sc 4-7, mins 4-7] interleaved to [sc 0-3, sc 4-7, mins 0-3, 4-7].
  return _mm_unpacklo_epi32(low, _mm_or_si128(nib, top));
}

// A pshufb control that copies int16 lane g of each 128-bit half to all its lanes.
inline __m256i pick_word(int g) {
  return _mm256_set1_epi16(static_cast<int16_t>((2 * g + 1) << 8 | 2 * g));
}

// ---- Q4_K: x = d * sc_g * q - dmin * m_g, q in 0..15, 8 groups of 32 ----
template <unsigned NT>
void q4_k_row(const std::byte* row, uint64_t cols, const std::byte* x, uint64_t xs, float* out) {
  const uint64_t nb = cols / gguf::kSuperBlock;
  const auto* w = reinterpret_cast<const BlockQ4_K*>(row);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  __m256 acc[NT];
  for (unsigned t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  for (uint64_t b = 0; b < nb; ++b, ++w) {
    const __m128i packed = unpack_k4_scales(w->scales);
    const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(packed));
    // One min per 32 elements against the activations' sums per 16: each min twice.
    const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(packed, packed));
    const float d = half(w->d), dmin = half(w->dmin);
    __m256i isum[NT];
    for (unsigned t = 0; t < NT; ++t) isum[t] = _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {
      const __m256i q = load(w->qs + 32 * c);
      const __m256i lo = _mm256_and_si256(q, m4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
      const __m256i s_lo = _mm256_shuffle_epi8(scales, pick_word(2 * c));
      const __m256i s_hi = _mm256_shuffle_epi8(scales, pick_word(2 * c + 1));
      for (unsigned t = 0; t < NT; ++t) {
        const int8_t* xq = act_row<ActQ8K>(x, xs, t)[b].qs + 64 * c;
        isum[t] = dot_u8s8_scaled(isum[t], lo, load(xq), s_lo);
        isum[t] = dot_u8s8_scaled(isum[t], hi, load(xq + 32), s_hi);
      }
    }
    for (unsigned t = 0; t < NT; ++t) {
      const ActQ8K& xb = act_row<ActQ8K>(x, xs, t)[b];
      const __m256i msum = _mm256_madd_epi16(load(xb.bsums), mins16);
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_set1_ps(d * xb.d), acc[t]);
      acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_set1_ps(dmin * xb.d), acc[t]);
    }
  }
  for (unsigned t = 0; t < NT; ++t) out[t] = hsum(acc[t]);
}

// ---- Q5_K: Q4_K with a fifth bit per element in qh ----
template <unsigned NT>
void q5_k_row(const std::byte* row, uint64_t cols, const std::byte* x, uint64_t xs, float* out) {
  const uint64_t nb = cols / gguf::kSuperBlock;
  const auto* w = reinterpret_cast<const BlockQ5_K*>(row);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i bit = _mm256_set1_epi8(0x01);
  __m256 acc[NT];
  for (unsigned t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  for (uint64_t b = 0; b < nb; ++b, ++w) {
    const __m128i packed = unpack_k4_scales(w->scales);
    const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(packed));
    const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(packed, packed));
    const float d = half(w->d), dmin = half(w->dmin);
    const __m256i qh = load(w->qh);
    __m256i isum[NT];
    for (unsigned t = 0; t < NT; ++t) isum[t] = _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {
      const __m256i q = load(w->qs + 32 * c);
      // Bit 2c (2c+1) of each qh byte, moved to bit 4 of that byte; the 16-bit shifts cannot
      // carry between bytes once masked to one bit.
      const __m256i h_lo =
          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), bit), 4);
      const __m256i h_hi =
          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c + 1), bit), 4);
      const __m256i lo = _mm256_or_si256(_mm256_and_si256(q, m4), h_lo);
      const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), h_hi);
      const __m256i s_lo = _mm256_shuffle_epi8(scales, pick_word(2 * c));
      const __m256i s_hi = _mm256_shuffle_epi8(scales, pick_word(2 * c + 1));
      for (unsigned t = 0; t < NT; ++t) {
        const int8_t* xq = act_row<ActQ8K>(x, xs, t)[b].qs + 64 * c;
        isum[t] = dot_u8s8_scaled(isum[t], lo, load(xq), s_lo);
        isum[t] = dot_u8s8_scaled(isum[t], hi, load(xq + 32), s_hi);
      }
    }
    for (unsigned t = 0; t < NT; ++t) {
      const ActQ8K& xb = act_row<ActQ8K>(x, xs, t)[b];
      const __m256i msum = _mm256_madd_epi16(load(xb.bsums), mins16);
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_set1_ps(d * xb.d), acc[t]);
      acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_set1_ps(dmin * xb.d), acc[t]);
    }
  }
  for (unsigned t = 0; t < NT; ++t) out[t] = hsum(acc[t]);
}

// ---- Q6_K: x = d * sc_g * (q - 32), q 6-bit, 16 groups of 16 with int8 scales ----
template <unsigned NT>
void q6_k_row(const std::byte* row, uint64_t cols, const std::byte* x, uint64_t xs, float* out) {
  const uint64_t nb = cols / gguf::kSuperBlock;
  const auto* w = reinterpret_cast<const BlockQ6_K*>(row);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i m30 = _mm256_set1_epi8(0x30);
  __m256 acc[NT];
  for (unsigned t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  for (uint64_t b = 0; b < nb; ++b, ++w) {
    const int8_t* sc = w->scales;
    const __m256i sc16 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc)));
    const float d = half(w->d);
    __m256i isum[NT];
    for (unsigned t = 0; t < NT; ++t) isum[t] = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = load(w->ql + 64 * h);
      const __m256i ql1 = load(w->ql + 64 * h + 32);
      const __m256i qh = load(w->qh + 32 * h);
      // Elements 128h + 32k + l: low bits from ql (nibble k / 2 of byte l (+32 for odd k)),
      // high bits 2k, 2k+1 of qh[l], placed at bits 4-5.
      const __m256i q[4] = {
          _mm256_or_si256(_mm256_and_si256(ql0, m4),
                          _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30)),
          _mm256_or_si256(_mm256_and_si256(ql1, m4),
                          _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                          _mm256_and_si256(qh, m30)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                          _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30)),
      };
      for (int k = 0; k < 4; ++k) {
        const __m256i s = scale_pair(sc[8 * h + 2 * k], sc[8 * h + 2 * k + 1]);
        for (unsigned t = 0; t < NT; ++t) {
          const int8_t* xq = act_row<ActQ8K>(x, xs, t)[b].qs + 128 * h + 32 * k;
          isum[t] = dot_u8s8_scaled(isum[t], q[k], load(xq), s);
        }
      }
    }
    for (unsigned t = 0; t < NT; ++t) {
      const ActQ8K& xb = act_row<ActQ8K>(x, xs, t)[b];
      // The -32 offset: 32 * sum over groups of scale * (sum of the group's activations).
      const __m256i bias = _mm256_madd_epi16(load(xb.bsums), sc16);
      const __m256i total = _mm256_sub_epi32(isum[t], _mm256_slli_epi32(bias, 5));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(total), _mm256_set1_ps(d * xb.d), acc[t]);
    }
  }
  for (unsigned t = 0; t < NT; ++t) out[t] = hsum(acc[t]);
}

// One block of 32 signed weight bytes qw (scale d) against block b of every token's q8
// activations: |w| . (x with w's sign moved onto it), since the byte dot takes unsigned x signed.
template <unsigned NT>
void add_signed_block(__m256 (&acc)[NT], __m256i qw, float d, const std::byte* x, uint64_t xs,
                      uint64_t b) {
  const __m256i aw = _mm256_abs_epi8(qw);
  for (unsigned t = 0; t < NT; ++t) {
    const ActQ8_0& xb = act_row<ActQ8_0>(x, xs, t)[b];
    const __m256i s = _mm256_sign_epi8(load(xb.qs), qw);
    const __m256i p = dot_u8s8(_mm256_setzero_si256(), aw, s);
    acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(d * xb.d), acc[t]);
  }
}

// ---- Q8_0: x = d * q, signed; |w| against x with w's sign moved onto x ----
template <unsigned NT>
void q8_0_row(const std::byte* row, uint64_t cols, const std::byte* x, uint64_t xs, float* out) {
  const uint64_t nb = cols / gguf::kLegacyBlock;
  const auto* w = reinterpret_cast<const BlockQ8_0*>(row);
  __m256 acc[NT];
  for (unsigned t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  for (uint64_t b = 0; b < nb; ++b, ++w)
    add_signed_block<NT>(acc, load(w->qs), half(w->d), x, xs, b);
  for (unsigned t = 0; t < NT; ++t) out[t] = hsum(acc[t]);
}

// ---- Q4_0: x = d * (q - 8); the -8 goes through the activations' block sums ----
template <unsigned NT>
void q4_0_row(const std::byte* row, uint64_t cols, const std::byte* x, uint64_t xs, float* out) {
  const uint64_t nb = cols / gguf::kLegacyBlock;
  const auto* w = reinterpret_cast<const BlockQ4_0*>(row);
  const __m128i m4 = _mm_set1_epi8(0x0F);
  __m256 acc[NT];
  float corr[NT];
  for (unsigned t = 0; t < NT; ++t) {
    acc[t] = _mm256_setzero_ps();
    corr[t] = 0.0f;
  }
  for (uint64_t b = 0; b < nb; ++b, ++w) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w->qs));
    const __m256i q =
        _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m4), _mm_and_si128(v, m4));
    const float d = half(w->d);
    for (unsigned t = 0; t < NT; ++t) {
      const ActQ8_0& xb = act_row<ActQ8_0>(x, xs, t)[b];
      const __m256i p = dot_u8s8(_mm256_setzero_si256(), q, load(xb.qs));
      const float dd = d * xb.d;
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dd), acc[t]);
      corr[t] += dd * static_cast<float>(8 * xb.sum);
    }
  }
  for (unsigned t = 0; t < NT; ++t) out[t] = hsum(acc[t]) - corr[t];
}

// ---- MXFP4: x = kMxfp4Values[q] * 2^(e - 128), 17-byte blocks (unaligned) ----
// The codes become signed bytes through a 16-entry byte shuffle of the (doubled, integral) E2M1
// values, then go the Q8_0 way: |w| against x with w's sign moved onto x. |w| <= 12, so the
// pair sums stay far inside int16.
inline float e8m0_half(uint8_t e) {  // gguf::mxfp4_half_scale, kept local to the ISA build
  const uint32_t bits = e < 2 ? uint32_t{0x00200000} << e : uint32_t{e - 1u} << 23;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

template <unsigned NT>
void mxfp4_row(const std::byte* row, uint64_t cols, const std::byte* x, uint64_t xs, float* out) {
  const uint64_t nb = cols / gguf::kLegacyBlock;
  const auto* w = reinterpret_cast<const uint8_t*>(row);
  const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(gguf::kMxfp4Values));
  const __m128i m4 = _mm_set1_epi8(0x0F);
  __m256 acc[NT];
  for (unsigned t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  for (uint64_t b = 0; b < nb; ++b, w += sizeof(gguf::BlockMXFP4)) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 1));
    const __m256i qw =
        _mm256_set_m128i(_mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(v, 4), m4)),
                         _mm_shuffle_epi8(table, _mm_and_si128(v, m4)));
    add_signed_block<NT>(acc, qw, e8m0_half(w[0]), x, xs, b);
  }
  for (unsigned t = 0; t < NT; ++t) out[t] = hsum(acc[t]);
}

// ---- F16 / BF16 / F32 weights against float activations ----
struct F16Elems {
  using T = uint16_t;
  static __m256 load8(const T* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static float one(T v) { return half(v); }
};
struct BF16Elems {
  using T = uint16_t;
  // bfloat16 is the top half of a float.
  static __m256 load8(const T* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
  }
  static float one(T v) {
    const uint32_t bits = uint32_t{v} << 16;
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    return f;
  }
};
struct F32Elems {
  using T = float;
  static __m256 load8(const T* p) { return _mm256_loadu_ps(p); }
  static float one(T v) { return v; }
};

template <typename E, unsigned NT>
void float_row(const std::byte* row, uint64_t cols, const std::byte* x, uint64_t xs, float* out) {
  const auto* w = reinterpret_cast<const typename E::T*>(row);
  __m256 acc0[NT], acc1[NT];
  for (unsigned t = 0; t < NT; ++t) acc0[t] = acc1[t] = _mm256_setzero_ps();
  uint64_t i = 0;
  for (; i + 16 <= cols; i += 16) {
    const __m256 w0 = E::load8(w + i);
    const __m256 w1 = E::load8(w + i + 8);
    for (unsigned t = 0; t < NT; ++t) {
      const float* xt = act_row<float>(x, xs, t) + i;
      acc0[t] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xt), acc0[t]);
      acc1[t] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xt + 8), acc1[t]);
    }
  }
  for (; i + 8 <= cols; i += 8) {
    const __m256 w0 = E::load8(w + i);
    for (unsigned t = 0; t < NT; ++t) {
      acc0[t] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(act_row<float>(x, xs, t) + i), acc0[t]);
    }
  }
  for (unsigned t = 0; t < NT; ++t) {
    float s = hsum(_mm256_add_ps(acc0[t], acc1[t]));
    const float* xt = act_row<float>(x, xs, t);
    for (uint64_t j = i; j < cols; ++j) s += E::one(w[j]) * xt[j];
    out[t] = s;
  }
}

template <unsigned NT>
void f16_row(const std::byte* row, uint64_t cols, const std::byte* x, uint64_t xs, float* out) {
  float_row<F16Elems, NT>(row, cols, x, xs, out);
}
template <unsigned NT>
void bf16_row(const std::byte* row, uint64_t cols, const std::byte* x, uint64_t xs, float* out) {
  float_row<BF16Elems, NT>(row, cols, x, xs, out);
}
template <unsigned NT>
void f32_row(const std::byte* row, uint64_t cols, const std::byte* x, uint64_t xs, float* out) {
  float_row<F32Elems, NT>(row, cols, x, xs, out);
}

// One entry point per type: picks the unrolled body for the token count.
template <template <unsigned> class Body>
void by_tokens(const std::byte* row, uint64_t cols, const std::byte* x, uint64_t xs, unsigned ntok,
               float* out) {
  switch (ntok) {
    case 1:
      return Body<1>::run(row, cols, x, xs, out);
    case 2:
      return Body<2>::run(row, cols, x, xs, out);
    case 3:
      return Body<3>::run(row, cols, x, xs, out);
    default:
      return Body<4>::run(row, cols, x, xs, out);
  }
}

// The same up to eight tokens, for the 512-bit kernels (FastKernel::max_tokens 8).
template <template <unsigned> class Body>
void by_tokens8(const std::byte* row, uint64_t cols, const std::byte* x, uint64_t xs, unsigned ntok,
                float* out) {
  switch (ntok) {
    case 1:
      return Body<1>::run(row, cols, x, xs, out);
    case 2:
      return Body<2>::run(row, cols, x, xs, out);
    case 3:
      return Body<3>::run(row, cols, x, xs, out);
    case 4:
      return Body<4>::run(row, cols, x, xs, out);
    case 5:
      return Body<5>::run(row, cols, x, xs, out);
    case 6:
      return Body<6>::run(row, cols, x, xs, out);
    case 7:
      return Body<7>::run(row, cols, x, xs, out);
    default:
      return Body<8>::run(row, cols, x, xs, out);
  }
}

template <template <unsigned> class Body>
void rows_one_token(const std::byte* row, uint64_t row_bytes, uint64_t nrows, uint64_t cols,
                    const std::byte* x, float* y, bool accumulate, const std::byte* end,
                    uint64_t prefetch_distance) {
  for (uint64_t r = 0; r < nrows; ++r, row += row_bytes) {
    // Offsets, not pointers: the prefetch window may start past the tensor's end.
    const auto left = static_cast<uint64_t>(end - row);
    if (prefetch_distance < left) {
      const uint64_t to = std::min(left, prefetch_distance + row_bytes);
      for (uint64_t a = prefetch_distance; a < to; a += 64) __builtin_prefetch(row + a);
    }
    float out;
    Body<1>::run(row, cols, x, 0, &out);
    y[r] = accumulate ? y[r] + out : out;
  }
}

// A FastKernel over a body: `fn` for up to max_tokens (4 or 8) tokens, rows1 for one.
template <template <unsigned> class Body, unsigned MaxTokens = 4>
FastKernel fast(ActFormat act, TileKernel tile = nullptr) {
  static_assert(MaxTokens == 4 || MaxTokens == 8);
  FastKernel k;
  if constexpr (MaxTokens == 8) {
    k.fn = by_tokens8<Body>;
  } else {
    k.fn = by_tokens<Body>;
  }
  k.act = act;
  k.tile = tile;
  k.max_tokens = MaxTokens;
  k.rows1 = rows_one_token<Body>;
  return k;
}

#define VKLLM_QMM_BODY(name)                                                                    \
  template <unsigned NT>                                                                        \
  struct name##_body {                                                                          \
    static void run(const std::byte* r, uint64_t c, const std::byte* x, uint64_t s, float* o) { \
      name##_row<NT>(r, c, x, s, o);                                                            \
    }                                                                                           \
  };
VKLLM_QMM_BODY(q4_k)
VKLLM_QMM_BODY(q5_k)
VKLLM_QMM_BODY(q6_k)
VKLLM_QMM_BODY(q8_0)
VKLLM_QMM_BODY(q4_0)
VKLLM_QMM_BODY(mxfp4)
VKLLM_QMM_BODY(f16)
VKLLM_QMM_BODY(bf16)
VKLLM_QMM_BODY(f32)

}  // namespace
}  // namespace vkllm::cpu::detail
