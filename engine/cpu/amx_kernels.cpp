// AMX-BF16 build of the AMX matmul's tile pieces (compiled with -mamx-tile -mamx-bf16
// -mavx512bf16 and AVX-512; called only where isa.h found Isa::Amx). Nothing here may be a
// template or inline function another file also instantiates: the linker could keep this file's
// copy, with instructions a CPU without AMX lacks.
// GCC 12's unmasked 512-bit intrinsics start from _mm512_undefined_*(), which -Wuninitialized
// reports once they are inlined here; the value is never read.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "engine/cpu/amx_kernels.h"

#include <immintrin.h>

#include <cstring>

#include "engine/gguf/block_layouts.h"

namespace vkllm::cpu::detail {
namespace {

// 32 floats as 32 bf16 (round to nearest even) in one register, and the f32 value of each.
inline __m512i to_bf16(__m512 v0, __m512 v1) {
  return (__m512i)_mm512_cvtne2ps_pbh(v1, v0);  // v0 in the low half
}
inline __m512 low_f32(__m512i h) {
  return _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(h)), 16));
}
inline __m512 high_f32(__m512i h) {
  return _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(h, 1)), 16));
}

// Splits 32 floats into hi = bf16(v) and lo = bf16(v - hi).
inline void split(__m512 v0, __m512 v1, __m512i& hi, __m512i& lo) {
  hi = to_bf16(v0, v1);
  lo = to_bf16(_mm512_sub_ps(v0, low_f32(hi)), _mm512_sub_ps(v1, high_f32(hi)));
}

inline __m512 load_cols(const float* p, uint64_t col, uint64_t cols) {
  if (col + 16 <= cols) return _mm512_loadu_ps(p + col);
  if (col >= cols) return _mm512_setzero_ps();
  const __mmask16 m = static_cast<__mmask16>((1u << (cols - col)) - 1);
  return _mm512_maskz_loadu_ps(m, p + col);
}

inline float half(uint16_t h) {
  return _cvtsh_ss(h);
}

// 16 bytes to 16 int32 lanes.
inline __m512i bytes_u(const uint8_t* p) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

void dequant_q8_0(const std::byte* src, float* dst, uint64_t blocks) {
  for (uint64_t b = 0; b < blocks; ++b, dst += gguf::kLegacyBlock) {
    const std::byte* blk = src + b * sizeof(gguf::BlockQ8_0);
    uint16_t dh;
    std::memcpy(&dh, blk, 2);
    const __m512 d = _mm512_set1_ps(half(dh));
    for (int i = 0; i < 2; ++i) {
      const __m512i q =
          _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2 + 16 * i)));
      _mm512_storeu_ps(dst + 16 * i, _mm512_mul_ps(_mm512_cvtepi32_ps(q), d));
    }
  }
}

void dequant_q4_0(const std::byte* src, float* dst, uint64_t blocks) {
  const __m512i low4 = _mm512_set1_epi32(15), eight = _mm512_set1_epi32(8);
  for (uint64_t b = 0; b < blocks; ++b, dst += gguf::kLegacyBlock) {
    const std::byte* blk = src + b * sizeof(gguf::BlockQ4_0);
    uint16_t dh;
    std::memcpy(&dh, blk, 2);
    const __m512 d = _mm512_set1_ps(half(dh));
    const __m512i q = bytes_u(reinterpret_cast<const uint8_t*>(blk + 2));
    const __m512i lo = _mm512_sub_epi32(_mm512_and_si512(q, low4), eight);
    const __m512i hi = _mm512_sub_epi32(_mm512_srli_epi32(q, 4), eight);
    _mm512_storeu_ps(dst, _mm512_mul_ps(_mm512_cvtepi32_ps(lo), d));
    _mm512_storeu_ps(dst + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(hi), d));
  }
}

// The 6-bit scale and min of group g (0..7) of a Q4_K block (engine/gguf's packing).
inline void scale_min(const uint8_t* p, int g, int& sc, int& m) {
  if (g < 4) {
    sc = p[g] & 63;
    m = p[g + 4] & 63;
  } else {
    sc = (p[g + 4] & 15) | ((p[g - 4] >> 6) << 4);
    m = (p[g + 4] >> 4) | ((p[g] >> 6) << 4);
  }
}

void dequant_q4_k(const std::byte* src, float* dst, uint64_t blocks) {
  const __m512i low4 = _mm512_set1_epi32(15);
  for (uint64_t b = 0; b < blocks; ++b) {
    const auto* blk = reinterpret_cast<const gguf::BlockQ4_K*>(src + b * sizeof(gguf::BlockQ4_K));
    uint16_t dh, mh;
    std::memcpy(&dh, &blk->d, 2);
    std::memcpy(&mh, &blk->dmin, 2);
    const float d = half(dh), dmin = half(mh);
    for (int chunk = 0; chunk < 4; ++chunk) {
      int sc0, m0, sc1, m1;
      scale_min(blk->scales, 2 * chunk, sc0, m0);
      scale_min(blk->scales, 2 * chunk + 1, sc1, m1);
      const __m512 d0 = _mm512_set1_ps(d * sc0), o0 = _mm512_set1_ps(dmin * m0);
      const __m512 d1 = _mm512_set1_ps(d * sc1), o1 = _mm512_set1_ps(dmin * m1);
      const uint8_t* qs = blk->qs + 32 * chunk;
      for (int h = 0; h < 2; ++h) {
        const __m512i q = bytes_u(qs + 16 * h);
        const __m512 lo = _mm512_cvtepi32_ps(_mm512_and_si512(q, low4));
        const __m512 hi = _mm512_cvtepi32_ps(_mm512_srli_epi32(q, 4));
        _mm512_storeu_ps(dst + 16 * h, _mm512_sub_ps(_mm512_mul_ps(d0, lo), o0));
        _mm512_storeu_ps(dst + 32 + 16 * h, _mm512_sub_ps(_mm512_mul_ps(d1, hi), o1));
      }
      dst += 64;
    }
  }
}

void dequant_q5_k(const std::byte* src, float* dst, uint64_t blocks) {
  const __m512i low4 = _mm512_set1_epi32(15), one = _mm512_set1_epi32(1);
  for (uint64_t b = 0; b < blocks; ++b) {
    const auto* blk = reinterpret_cast<const gguf::BlockQ5_K*>(src + b * sizeof(gguf::BlockQ5_K));
    uint16_t dh, mh;
    std::memcpy(&dh, &blk->d, 2);
    std::memcpy(&mh, &blk->dmin, 2);
    const float d = half(dh), dmin = half(mh);
    const __m512i qh[2] = {bytes_u(blk->qh), bytes_u(blk->qh + 16)};
    for (int chunk = 0; chunk < 4; ++chunk) {
      int sc0, m0, sc1, m1;
      scale_min(blk->scales, 2 * chunk, sc0, m0);
      scale_min(blk->scales, 2 * chunk + 1, sc1, m1);
      const __m512 d0 = _mm512_set1_ps(d * sc0), o0 = _mm512_set1_ps(dmin * m0);
      const __m512 d1 = _mm512_set1_ps(d * sc1), o1 = _mm512_set1_ps(dmin * m1);
      const uint8_t* qs = blk->qs + 32 * chunk;
      for (int h = 0; h < 2; ++h) {
        const __m512i q = bytes_u(qs + 16 * h);
        const __m512i b0 = _mm512_and_si512(_mm512_srli_epi32(qh[h], 2 * chunk), one);
        const __m512i b1 = _mm512_and_si512(_mm512_srli_epi32(qh[h], 2 * chunk + 1), one);
        const __m512 lo = _mm512_cvtepi32_ps(
            _mm512_or_si512(_mm512_and_si512(q, low4), _mm512_slli_epi32(b0, 4)));
        const __m512 hi =
            _mm512_cvtepi32_ps(_mm512_or_si512(_mm512_srli_epi32(q, 4), _mm512_slli_epi32(b1, 4)));
        _mm512_storeu_ps(dst + 16 * h, _mm512_sub_ps(_mm512_mul_ps(d0, lo), o0));
        _mm512_storeu_ps(dst + 32 + 16 * h, _mm512_sub_ps(_mm512_mul_ps(d1, hi), o1));
      }
      dst += 64;
    }
  }
}

void dequant_q6_k(const std::byte* src, float* dst, uint64_t blocks) {
  const __m512i low4 = _mm512_set1_epi32(15), two = _mm512_set1_epi32(3);
  const __m512i bias = _mm512_set1_epi32(32);
  for (uint64_t b = 0; b < blocks; ++b) {
    const auto* blk = reinterpret_cast<const gguf::BlockQ6_K*>(src + b * sizeof(gguf::BlockQ6_K));
    uint16_t dh;
    std::memcpy(&dh, &blk->d, 2);
    const float d = half(dh);
    for (int half_i = 0; half_i < 2; ++half_i) {
      const uint8_t* ql = blk->ql + 64 * half_i;
      const uint8_t* qh = blk->qh + 32 * half_i;
      const int8_t* sc = blk->scales + 8 * half_i;
      for (int g = 0; g < 2; ++g) {
        const int l = 16 * g;
        const __m512i a = bytes_u(ql + l), c = bytes_u(ql + l + 32), h = bytes_u(qh + l);
        const __m512i q0 = _mm512_or_si512(_mm512_and_si512(a, low4),
                                           _mm512_slli_epi32(_mm512_and_si512(h, two), 4));
        const __m512i q1 =
            _mm512_or_si512(_mm512_and_si512(c, low4),
                            _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(h, 2), two), 4));
        const __m512i q2 =
            _mm512_or_si512(_mm512_srli_epi32(a, 4),
                            _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(h, 4), two), 4));
        const __m512i q3 =
            _mm512_or_si512(_mm512_srli_epi32(c, 4), _mm512_slli_epi32(_mm512_srli_epi32(h, 6), 4));
        const __m512i qs[4] = {q0, q1, q2, q3};
        for (int k = 0; k < 4; ++k) {
          const __m512 v = _mm512_cvtepi32_ps(_mm512_sub_epi32(qs[k], bias));
          const __m512 s = _mm512_set1_ps(d * sc[g + 2 * k]);
          _mm512_storeu_ps(dst + l + 32 * k, _mm512_mul_ps(s, v));
        }
      }
      dst += 128;
    }
  }
}

// Stores the 16 x 16 transpose of r (16 dwords each, a dword = one bf16 column pair) as one B
// tile: row k of dst = dword k of every r. Three rounds: dword pairs, then qword pairs within
// 128-bit lanes, then the 4 x 4 transpose of the lanes.
void transpose_store(const __m512i* r, uint16_t* dst) {
  __m512i t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  // u[g][c], lane L: column 4 L + c of rows 4 g .. 4 g + 3.
  __m512i u[4][4];
  for (int g = 0; g < 4; ++g) {
    const __m512i* q = t + 4 * g;
    u[g][0] = _mm512_unpacklo_epi64(q[0], q[2]);
    u[g][1] = _mm512_unpackhi_epi64(q[0], q[2]);
    u[g][2] = _mm512_unpacklo_epi64(q[1], q[3]);
    u[g][3] = _mm512_unpackhi_epi64(q[1], q[3]);
  }
  for (int c = 0; c < 4; ++c) {
    const __m512i v0 = _mm512_shuffle_i32x4(u[0][c], u[1][c], 0x44);
    const __m512i v1 = _mm512_shuffle_i32x4(u[0][c], u[1][c], 0xee);
    const __m512i v2 = _mm512_shuffle_i32x4(u[2][c], u[3][c], 0x44);
    const __m512i v3 = _mm512_shuffle_i32x4(u[2][c], u[3][c], 0xee);
    _mm512_storeu_si512(dst + (0 + c) * kAmxStep, _mm512_shuffle_i32x4(v0, v2, 0x88));
    _mm512_storeu_si512(dst + (4 + c) * kAmxStep, _mm512_shuffle_i32x4(v0, v2, 0xdd));
    _mm512_storeu_si512(dst + (8 + c) * kAmxStep, _mm512_shuffle_i32x4(v1, v3, 0x88));
    _mm512_storeu_si512(dst + (12 + c) * kAmxStep, _mm512_shuffle_i32x4(v1, v3, 0xdd));
  }
}

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

constexpr TileConfig make_config() {
  TileConfig cfg;
  for (int i = 0; i < 8; ++i) {
    cfg.colsb[i] = kAmxStep * sizeof(uint16_t);
    cfg.rows[i] = kAmxTile;
  }
  return cfg;
}
constexpr TileConfig kConfig = make_config();

// Tiles 0-3: results (token tile i, row tile j) at 2 * i + j; 4-5: activations; 6-7: weights.
template <AmxPrecision P, bool kTwo>
void block(const AmxBlock& b) {
  const uint64_t cs = b.c_stride * sizeof(float);
  float* c00 = b.c;
  float* c01 = b.c + kAmxTile;
  float* c10 = b.c + kAmxTile * b.c_stride;
  float* c11 = c10 + kAmxTile;
  if (b.zero) {
    _tile_zero(0);
    _tile_zero(1);
    if constexpr (kTwo) {
      _tile_zero(2);
      _tile_zero(3);
    }
  } else {
    _tile_loadd(0, c00, cs);
    _tile_loadd(1, c01, cs);
    if constexpr (kTwo) {
      _tile_loadd(2, c10, cs);
      _tile_loadd(3, c11, cs);
    }
  }
  constexpr uint64_t kRow = kAmxStep * sizeof(uint16_t);  // 64 bytes per tile row
  auto products = [] {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    if constexpr (kTwo) {
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  };
  for (uint32_t s = 0; s < b.steps; ++s) {
    const uint64_t o = s * kAmxTileElems;
    _tile_loadd(6, b.w_hi[0] + o, kRow);
    _tile_loadd(7, b.w_hi[1] + o, kRow);
    _tile_loadd(4, b.x_hi[0] + o, kRow);
    if constexpr (kTwo) _tile_loadd(5, b.x_hi[1] + o, kRow);
    products();
    if constexpr (P != AmxPrecision::Single) {
      _tile_loadd(4, b.x_lo[0] + o, kRow);
      if constexpr (kTwo) _tile_loadd(5, b.x_lo[1] + o, kRow);
      products();
    }
    if constexpr (P == AmxPrecision::SplitBoth) {
      _tile_loadd(6, b.w_lo[0] + o, kRow);
      _tile_loadd(7, b.w_lo[1] + o, kRow);
      _tile_loadd(4, b.x_hi[0] + o, kRow);
      if constexpr (kTwo) _tile_loadd(5, b.x_hi[1] + o, kRow);
      products();
    }
  }
  _tile_stored(0, c00, cs);
  _tile_stored(1, c01, cs);
  if constexpr (kTwo) {
    _tile_stored(2, c10, cs);
    _tile_stored(3, c11, cs);
  }
}

template <AmxPrecision P>
void block_tokens(const AmxBlock& b) {
  if (b.two_tokens) {
    block<P, true>(b);
  } else {
    block<P, false>(b);
  }
}

}  // namespace

bool amx_dequantize(gguf::TensorType type, const std::byte* src, float* dst, uint64_t n) {
  using gguf::TensorType;
  switch (type) {
    case TensorType::F32:
      std::memcpy(dst, src, n * sizeof(float));
      return true;
    case TensorType::F16: {
      uint64_t i = 0;
      for (; i + 16 <= n; i += 16) {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i));
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(h));
      }
      for (; i < n; ++i) {
        uint16_t v;
        std::memcpy(&v, src + 2 * i, 2);
        dst[i] = half(v);
      }
      return true;
    }
    case TensorType::BF16:
      for (uint64_t i = 0; i < n; ++i) {
        uint16_t v;
        std::memcpy(&v, src + 2 * i, 2);
        const uint32_t bits = uint32_t{v} << 16;
        std::memcpy(dst + i, &bits, 4);
      }
      return true;
    case TensorType::Q8_0:
      dequant_q8_0(src, dst, n / gguf::kLegacyBlock);
      return true;
    case TensorType::Q4_0:
      dequant_q4_0(src, dst, n / gguf::kLegacyBlock);
      return true;
    case TensorType::Q4_K:
      dequant_q4_k(src, dst, n / gguf::kSuperBlock);
      return true;
    case TensorType::Q5_K:
      dequant_q5_k(src, dst, n / gguf::kSuperBlock);
      return true;
    case TensorType::Q6_K:
      dequant_q6_k(src, dst, n / gguf::kSuperBlock);
      return true;
    default:
      return false;
  }
}

void amx_pack_x(const float* x, uint64_t x_stride, uint32_t ntok, uint64_t cols, uint32_t steps,
                uint16_t* hi, uint16_t* lo) {
  for (uint32_t s = 0; s < steps; ++s) {
    uint16_t* th = hi + s * kAmxTileElems;
    uint16_t* tl = lo ? lo + s * kAmxTileElems : nullptr;
    const uint64_t col = uint64_t{s} * kAmxStep;
    for (uint32_t t = 0; t < kAmxTile; ++t) {
      __m512i h = _mm512_setzero_si512(), l = _mm512_setzero_si512();
      if (t < ntok) {
        const float* xt = x + t * x_stride;
        split(load_cols(xt, col, cols), load_cols(xt, col + 16, cols), h, l);
      }
      _mm512_storeu_si512(th + t * kAmxStep, h);
      if (tl) _mm512_storeu_si512(tl + t * kAmxStep, l);
    }
  }
}

void amx_pack_w(const float* w, uint64_t w_stride, uint32_t nrows, uint32_t steps, uint16_t* hi,
                uint16_t* lo) {
  for (uint32_t s = 0; s < steps; ++s) {
    __m512i h[kAmxTile], l[kAmxTile];
    for (uint32_t r = 0; r < kAmxTile; ++r) {
      h[r] = l[r] = _mm512_setzero_si512();
      if (r < nrows) {
        const float* p = w + r * w_stride + uint64_t{s} * kAmxStep;
        split(_mm512_loadu_ps(p), _mm512_loadu_ps(p + 16), h[r], l[r]);
      }
    }
    transpose_store(h, hi + s * kAmxTileElems);
    if (lo) transpose_store(l, lo + s * kAmxTileElems);
  }
}

void amx_begin() {
  // Constant data, not a local: GCC 12's _tile_loadconfig tells the compiler it reads only 8
  // bytes, so the stores that fill a local config can be dropped as dead.
  _tile_loadconfig(&kConfig);
}

void amx_end() {
  _tile_release();
}

void amx_block(const AmxBlock& b, AmxPrecision precision) {
  switch (precision) {
    case AmxPrecision::Single:
      block_tokens<AmxPrecision::Single>(b);
      break;
    case AmxPrecision::SplitX:
      block_tokens<AmxPrecision::SplitX>(b);
      break;
    case AmxPrecision::SplitBoth:
      block_tokens<AmxPrecision::SplitBoth>(b);
      break;
  }
}

}  // namespace vkllm::cpu::detail
