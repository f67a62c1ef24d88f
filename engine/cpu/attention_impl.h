// The attention group kernel's code, compiled once per ISA: attention_<isa>.cpp defines
// VKLLM_ATTEND_NAME and includes this file. Vectors are GCC vector types as wide as the file's
// ISA (4, 8 or 16 floats); f16 loads and horizontal sums use that ISA's intrinsics. Internal
// linkage throughout (see row_kernels_impl.h for why).
//
// For one group (a sequence's query tile and one KV head): Q rows (tokens x GQA heads) are copied
// pre-scaled; for each tile of kAttentionKeys cached positions, K and V rows are converted to
// f32 once, then every row computes its visible scores, updates its running max and sum (online
// softmax) and accumulates p * V into its output row.
#ifndef VKLLM_ATTEND_NAME
#error "define VKLLM_ATTEND_NAME before including attention_impl.h"
#endif

#include <cstdint>
#include <cstring>

#include "engine/cpu/attention_kernels.h"
#include "engine/cpu/fast_math_impl.h"
#include "engine/cpu/kv_rows.h"
#include "engine/gguf/quants.h"

#if defined(__F16C__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace vkllm::cpu::detail {
namespace {

// n f16 values (bits) to f32.
void f16_to_f32(const uint16_t* src, float* dst, uint32_t n) {
  uint32_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i,
                     _mm512_maskz_cvtph_ps(
                         0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
#endif
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
#endif
  for (; i < n; ++i) dst[i] = gguf::fp16_to_fp32(src[i]);
}

// W dot products at once: lane j of the result is the sum of acc[j]'s lanes.
inline VF reduce_lanes(const VF* acc) {
#if defined(__AVX512F__)
  // (GCC shuffles instead of the cast/extract intrinsics, which warn in GCC 12's headers.)
  typedef float V8 __attribute__((vector_size(32)));
  __m256 h[16];
  for (uint32_t j = 0; j < 16; ++j) {
    const VF a = acc[j];
    h[j] = __builtin_shufflevector(a, a, 0, 1, 2, 3, 4, 5, 6, 7) +
           __builtin_shufflevector(a, a, 8, 9, 10, 11, 12, 13, 14, 15);
  }
  __m256 half[2];
  for (uint32_t k = 0; k < 2; ++k) {
    const __m256* v = h + 8 * k;
    const __m256 t0 = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
    const __m256 t1 = _mm256_hadd_ps(_mm256_hadd_ps(v[4], v[5]), _mm256_hadd_ps(v[6], v[7]));
    half[k] =
        _mm256_add_ps(_mm256_permute2f128_ps(t0, t1, 0x20), _mm256_permute2f128_ps(t0, t1, 0x31));
  }
  const V8 lo = half[0], hi = half[1];
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
#elif defined(__AVX2__)
  const __m256 t0 = _mm256_hadd_ps(_mm256_hadd_ps(acc[0], acc[1]), _mm256_hadd_ps(acc[2], acc[3]));
  const __m256 t1 = _mm256_hadd_ps(_mm256_hadd_ps(acc[4], acc[5]), _mm256_hadd_ps(acc[6], acc[7]));
  return _mm256_add_ps(_mm256_permute2f128_ps(t0, t1, 0x20), _mm256_permute2f128_ps(t0, t1, 0x31));
#else
  VF r;
  for (uint32_t j = 0; j < W; ++j) r[j] = hsum(acc[j]);
  return r;
#endif
}

// s[c] = q . k[c] for c < nk; k rows of D floats.
void dots(const float* q, const float* k, uint32_t nk, uint32_t D, float* s) {
  if (D % W != 0) {
    for (uint32_t c = 0; c < nk; ++c) {
      float acc = 0.f;
      for (uint32_t d = 0; d < D; ++d) acc += q[d] * k[size_t(c) * D + d];
      s[c] = acc;
    }
    return;
  }
  uint32_t c = 0;
  for (; c + W <= nk; c += W) {
    VF acc[W] = {};
    const float* kc = k + size_t(c) * D;
    for (uint32_t d = 0; d < D; d += W) {
      const VF qv = loadv(q + d);
      for (uint32_t j = 0; j < W; ++j) acc[j] += qv * loadv(kc + size_t(j) * D + d);
    }
    storev(s + c, reduce_lanes(acc));
  }
  for (; c < nk; ++c) {
    VF acc = {};
    for (uint32_t d = 0; d < D; d += W) acc += loadv(q + d) * loadv(k + size_t(c) * D + d);
    s[c] = hsum(acc);
  }
}

// s[j * kAttentionKeys + c] = q_j . k[c] for NR rows q_j (D floats apart) and the keys c in
// [c0, c1) (multiples of W), from the tile's keys transposed (kt[d * kAttentionKeys + c]): each
// key vector loaded feeds NR rows, and the W scores of a block come out of one accumulator with
// no horizontal sums.
template <uint32_t NR>
void dots_rows(const float* q, uint32_t D, const float* kt, uint32_t c0, uint32_t c1, float* s) {
  constexpr uint32_t KA = kAttentionKeys;
  uint32_t c = c0;
  for (; c + 2 * W <= c1; c += 2 * W) {
    VF a0[NR], a1[NR];
    for (uint32_t j = 0; j < NR; ++j) a0[j] = a1[j] = splat(0.f);
    for (uint32_t d = 0; d < D; ++d) {
      const VF k0 = loadv(kt + size_t(d) * KA + c), k1 = loadv(kt + size_t(d) * KA + c + W);
      for (uint32_t j = 0; j < NR; ++j) {
        const VF qj = splat(q[size_t(j) * D + d]);
        a0[j] += qj * k0;
        a1[j] += qj * k1;
      }
    }
    for (uint32_t j = 0; j < NR; ++j) {
      storev(s + j * KA + c, a0[j]);
      storev(s + j * KA + c + W, a1[j]);
    }
  }
  for (; c < c1; c += W) {
    VF a0[NR];
    for (uint32_t j = 0; j < NR; ++j) a0[j] = splat(0.f);
    for (uint32_t d = 0; d < D; ++d) {
      const VF k0 = loadv(kt + size_t(d) * KA + c);
      for (uint32_t j = 0; j < NR; ++j) a0[j] += splat(q[size_t(j) * D + d]) * k0;
    }
    for (uint32_t j = 0; j < NR; ++j) storev(s + j * KA + c, a0[j]);
  }
}

// o[d0 .. d0 + NV*W) = o * alpha + sum_c p[c] * v[c][..].
template <uint32_t NV>
inline void axpy_block(float* o, const float* p, const float* v, uint32_t nk, uint32_t D,
                       float alpha) {
  VF acc[NV];
  for (uint32_t i = 0; i < NV; ++i) acc[i] = loadv(o + i * W) * alpha;
  for (uint32_t c = 0; c < nk; ++c) {
    const VF pc = splat(p[c]);
    const float* vc = v + size_t(c) * D;
    for (uint32_t i = 0; i < NV; ++i) acc[i] += pc * loadv(vc + i * W);
  }
  for (uint32_t i = 0; i < NV; ++i) storev(o + i * W, acc[i]);
}

// The same for NR rows at once (o rows D floats apart, p rows kAttentionKeys apart, one alpha
// each): every V vector loaded feeds NR rows.
template <uint32_t NR, uint32_t NV>
inline void axpy_rows_block(float* o, const float* p, const float* v, uint32_t nk, uint32_t D,
                            const float* alpha) {
  VF acc[NR][NV];
  for (uint32_t j = 0; j < NR; ++j)
    for (uint32_t i = 0; i < NV; ++i) acc[j][i] = loadv(o + size_t(j) * D + i * W) * alpha[j];
  for (uint32_t c = 0; c < nk; ++c) {
    VF vc[NV];
    for (uint32_t i = 0; i < NV; ++i) vc[i] = loadv(v + size_t(c) * D + i * W);
    for (uint32_t j = 0; j < NR; ++j) {
      const VF pj = splat(p[size_t(j) * kAttentionKeys + c]);
      for (uint32_t i = 0; i < NV; ++i) acc[j][i] += pj * vc[i];
    }
  }
  for (uint32_t j = 0; j < NR; ++j)
    for (uint32_t i = 0; i < NV; ++i) storev(o + size_t(j) * D + i * W, acc[j][i]);
}

// D % W == 0 only.
template <uint32_t NR>
void accumulate_rows(float* o, const float* p, const float* v, uint32_t nk, uint32_t D,
                     const float* alpha) {
  uint32_t d = 0;
  for (; d + 4 * W <= D; d += 4 * W) axpy_rows_block<NR, 4>(o + d, p, v + d, nk, D, alpha);
  for (; d + W <= D; d += W) axpy_rows_block<NR, 1>(o + d, p, v + d, nk, D, alpha);
}

void accumulate(float* o, const float* p, const float* v, uint32_t nk, uint32_t D, float alpha) {
  if (D % W != 0) {
    for (uint32_t d = 0; d < D; ++d) {
      float acc = o[d] * alpha;
      for (uint32_t c = 0; c < nk; ++c) acc += p[c] * v[size_t(c) * D + d];
      o[d] = acc;
    }
    return;
  }
  uint32_t d = 0;
  for (; d + 8 * W <= D; d += 8 * W) axpy_block<8>(o + d, p, v + d, nk, D, alpha);
  if (d + 4 * W <= D) {
    axpy_block<4>(o + d, p, v + d, nk, D, alpha);
    d += 4 * W;
  }
  if (d + 2 * W <= D) {
    axpy_block<2>(o + d, p, v + d, nk, D, alpha);
    d += 2 * W;
  }
  if (d + W <= D) axpy_block<1>(o + d, p, v + d, nk, D, alpha);
}

constexpr float kNegInf = -__builtin_inff();

void attend(const AttentionArgs& a, const AttentionGroup& g, float* scratch) {
  const uint32_t D = a.head_dim, B = a.block_size, n_kv = a.n_kv_heads;
  const uint32_t R = a.n_q_heads / n_kv, rows = g.n_tokens * R;
  const uint32_t kv_len = g.kv_len;
  const uint32_t* table = g.table;

  float* qf = scratch;                          // rows x D, pre-scaled
  float* of = qf + size_t(rows) * D;            // rows x D
  float* kf = of + size_t(rows) * D;            // kAttentionKeys x D
  float* vf = kf + size_t(kAttentionKeys) * D;  // kAttentionKeys x D
  float* kt = vf + size_t(kAttentionKeys) * D;  // D x kAttentionKeys: kf transposed
  float* sc = kt + size_t(kAttentionKeys) * D;  // kAttentionRowBlock rows of kAttentionKeys scores
  float* m = sc + size_t(kAttentionKeys) * kAttentionRowBlock;  // rows
  float* l = m + rows;                                          // rows

  uint32_t min_pos = UINT32_MAX, max_pos = 0;
  for (uint32_t i = 0; i < g.n_tokens; ++i) {
    const uint32_t p = g.pos[i];
    min_pos = p < min_pos ? p : min_pos;
    max_pos = p > max_pos ? p : max_pos;
  }
  for (uint32_t r = 0; r < rows; ++r) {
    const uint32_t tl = r / R, h = g.kv_head * R + r % R;
    const float* src = g.q + size_t(tl) * g.q_stride + size_t(h) * D;
    for (uint32_t d = 0; d < D; ++d) qf[size_t(r) * D + d] = src[d] * a.scale;
    for (uint32_t d = 0; d < D; ++d) of[size_t(r) * D + d] = 0.f;
    m[r] = kNegInf;
    l[r] = 0.f;
  }
  // Without the causal mask a window is symmetric: keys up to max_pos + window - 1. Queries in
  // the open span reach the sequence's end.
  const uint32_t reach = max_pos >= g.open_from ? kv_len
                         : !a.causal            ? (a.window > 0 ? max_pos + a.window : kv_len)
                                                : max_pos + 1;
  uint32_t kv_hi = kv_len < reach ? kv_len : reach;
  uint32_t kv_lo = (a.window > 0 && min_pos + 1 > a.window) ? min_pos + 1 - a.window : 0;
  // Chunked attention: the earliest query's chunk starts first (chunk starts grow with position).
  if (a.chunk > 0 && min_pos - min_pos % a.chunk > kv_lo) kv_lo = min_pos - min_pos % a.chunk;
  if (g.n_splits > 1 && kv_hi > kv_lo) {  // this unit's slice of the range
    const uint32_t len = kv_hi - kv_lo, per = (len + g.n_splits - 1) / g.n_splits;
    const uint32_t begin = g.split * per < len ? g.split * per : len;
    const uint32_t end = begin + per < len ? begin + per : len;
    kv_hi = kv_lo + end;
    kv_lo += begin;
  }
  const bool capped = a.softcap > 0.f;
  const float inv_cap = capped ? 1.f / a.softcap : 0.f;

  for (uint32_t k0 = kv_lo; k0 < kv_hi; k0 += kAttentionKeys) {
    const uint32_t nk = kv_hi - k0 < kAttentionKeys ? kv_hi - k0 : kAttentionKeys;
    for (uint32_t c = 0; c < nk; ++c) {
      const uint32_t kp = k0 + c;
      const size_t row = (size_t(table[kp / B]) * n_kv + g.kv_head) * B + kp % B;
      if (a.cache_type == kv::CacheType::F16) {
        f16_to_f32(a.k_cache + row * D, kf + size_t(c) * D, D);
        f16_to_f32(a.v_cache + row * D, vf + size_t(c) * D, D);
      } else {
        const size_t at = row * 2 * kv::row_words(a.cache_type, D);
        dequantize_kv_row(a.cache_type, reinterpret_cast<const uint32_t*>(a.k_cache + at), D,
                          kf + size_t(c) * D);
        dequantize_kv_row(a.cache_type, reinterpret_cast<const uint32_t*>(a.v_cache + at), D,
                          vf + size_t(c) * D);
      }
    }
    // Keys in whole vectors for dots_rows: the tile's last block padded with zero keys.
    const uint32_t nk_padded = (nk + W - 1) / W * W;
    if (rows > 1) {
      for (uint32_t d = 0; d < D; ++d) {
        float* dst = kt + size_t(d) * kAttentionKeys;
        for (uint32_t c = 0; c < nk; ++c) dst[c] = kf[size_t(c) * D + d];
        for (uint32_t c = nk; c < nk_padded; ++c) dst[c] = 0.f;
      }
    }
    for (uint32_t r0 = 0; r0 < rows; r0 += kAttentionRowBlock) {
      const uint32_t nr = rows - r0 < kAttentionRowBlock ? rows - r0 : kAttentionRowBlock;
      // Each row's visible positions in this tile: [va, vb).
      uint32_t va[kAttentionRowBlock], vb[kAttentionRowBlock];
      uint32_t lo = nk, hi = 0;
      for (uint32_t j = 0; j < nr; ++j) {
        const uint32_t qp = g.pos[(r0 + j) / R];
        va[j] = 0;
        vb[j] = nk;
        // The last visible position + 1: the query's own (causal), or a symmetric window's end.
        const uint32_t end = qp >= g.open_from ? kv_hi
                             : a.causal        ? qp + 1
                             : a.window > 0    ? qp + a.window
                                               : kv_hi;
        vb[j] = end <= k0 ? 0 : (end - k0 < nk ? end - k0 : nk);
        if (a.window > 0 && qp + 1 > a.window) {
          const uint32_t first = qp + 1 - a.window;  // first visible position
          va[j] = first <= k0 ? 0 : (first - k0 < nk ? first - k0 : nk);
        }
        if (a.chunk > 0) {
          const uint32_t first = qp - qp % a.chunk;  // the query's chunk's first position
          const uint32_t from = first <= k0 ? 0 : (first - k0 < nk ? first - k0 : nk);
          va[j] = from > va[j] ? from : va[j];
        }
        if (va[j] < vb[j]) {
          lo = va[j] < lo ? va[j] : lo;
          hi = vb[j] > hi ? vb[j] : hi;
        }
      }
      // Several rows share the passes over the tile's keys and values; one row alone takes the
      // row kernels. (Vectors of V need D % W == 0.)
      const bool joint = nr > 1 && lo < hi && D % W == 0;
      float alphas[kAttentionRowBlock];
      // Scores of every row of the block over the union of their ranges (a row ignores those
      // outside its own).
      if (nr > 1 && lo < hi) {
        const uint32_t c0 = lo / W * W, c1 = (hi + W - 1) / W * W;
        const float* q0 = qf + size_t(r0) * D;
        if (nr == 4) dots_rows<4>(q0, D, kt, c0, c1, sc);
        if (nr == 3) dots_rows<3>(q0, D, kt, c0, c1, sc);
        if (nr == 2) dots_rows<2>(q0, D, kt, c0, c1, sc);
      }
      for (uint32_t j = 0; j < nr; ++j) {
        const uint32_t r = r0 + j;
        if (va[j] >= vb[j]) continue;
        const uint32_t nv = vb[j] - va[j];
        float* s = sc + size_t(j) * kAttentionKeys + va[j];
        if (nr == 1) dots(qf + size_t(r) * D, kf + size_t(va[j]) * D, nv, D, s);
        if (capped) {
          uint32_t c = 0;
          for (; c + W <= nv; c += W) storev(s + c, a.softcap * tanh_v(loadv(s + c) * inv_cap));
          for (; c < nv; ++c) s[c] = a.softcap * tanh_approx(s[c] * inv_cap);
        }
        VF mv = splat(kNegInf);
        uint32_t c = 0;
        for (; c + W <= nv; c += W) {
          const VF x = loadv(s + c);
          mv = x > mv ? x : mv;
        }
        float mx = m[r];
        for (uint32_t i = 0; i < W; ++i) mx = mv[i] > mx ? mv[i] : mx;
        for (; c < nv; ++c) mx = s[c] > mx ? s[c] : mx;
        const float alpha = m[r] == kNegInf ? 0.f : exp_approx(m[r] - mx);
        VF sum = {};
        c = 0;
        for (; c + W <= nv; c += W) {
          const VF e = exp_v(loadv(s + c) - mx);
          storev(s + c, e);
          sum += e;
        }
        float total = hsum(sum);
        for (; c < nv; ++c) {
          s[c] = exp_approx(s[c] - mx);
          total += s[c];
        }
        m[r] = mx;
        l[r] = l[r] * alpha + total;
        if (!joint) accumulate(of + size_t(r) * D, s, vf + size_t(va[j]) * D, nv, D, alpha);
        alphas[j] = alpha;
      }
      if (joint) {
        // p * V for the block's rows over the union of their ranges: zero weights outside a
        // row's own range, and rows with nothing visible here keep their output (alpha 1).
        for (uint32_t j = 0; j < nr; ++j) {
          float* row = sc + size_t(j) * kAttentionKeys;
          if (va[j] >= vb[j]) {
            alphas[j] = 1.f;
            for (uint32_t c = lo; c < hi; ++c) row[c] = 0.f;
            continue;
          }
          for (uint32_t c = lo; c < va[j]; ++c) row[c] = 0.f;
          for (uint32_t c = vb[j]; c < hi; ++c) row[c] = 0.f;
        }
        float* o = of + size_t(r0) * D;
        const float* v = vf + size_t(lo) * D;
        if (nr == 4) accumulate_rows<4>(o, sc + lo, v, hi - lo, D, alphas);
        if (nr == 3) accumulate_rows<3>(o, sc + lo, v, hi - lo, D, alphas);
        if (nr == 2) accumulate_rows<2>(o, sc + lo, v, hi - lo, D, alphas);
      }
    }
  }
  for (uint32_t r = 0; r < rows; ++r) {
    const uint32_t tl = r / R, h = g.kv_head * R + r % R;
    float* dst = g.out + size_t(tl) * g.out_stride + size_t(h) * D;
    if (g.ml != nullptr) {  // split-K partials: unnormalised
      std::memcpy(dst, of + size_t(r) * D, D * sizeof(float));
      float* ml = g.ml + size_t(tl) * g.ml_stride + size_t(h) * 2;
      ml[0] = m[r];
      ml[1] = l[r];
      continue;
    }
    float inv = l[r] > 0.f ? 1.f / l[r] : 0.f;
    if (a.sinks != nullptr) inv = sink_scaled_inverse(m[r], l[r], a.sinks[h]);
    for (uint32_t d = 0; d < D; ++d) dst[d] = of[size_t(r) * D + d] * inv;
  }
}

}  // namespace

extern const AttendFn VKLLM_ATTEND_NAME;
const AttendFn VKLLM_ATTEND_NAME = attend;

}  // namespace vkllm::cpu::detail
