#include "engine/cpu/ops.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/cpu/kv_rows.h"
#include "engine/cpu/row_kernels.h"
#include "engine/gguf/quants.h"

namespace vkllm::cpu {

using detail::ElementOp;
using detail::row_kernels;

void get_rows(const GetRowsArgs& a, uint32_t token_begin, uint32_t token_end) {
  if (!gguf::can_dequantize(a.type))
    throw std::invalid_argument("get_rows: no dequantizer for type " +
                                std::string(gguf::type_name(a.type)));
  const uint32_t block = gguf::traits(a.type).block_elements;
  if (a.row_elems == 0 || a.row_elems % block != 0)
    throw std::invalid_argument("get_rows: row of " + std::to_string(a.row_elems) +
                                " elements is not a multiple of the block size");
  const uint64_t row_bytes = a.row_bytes ? a.row_bytes : gguf::row_bytes(a.type, a.row_elems);
  const uint32_t stride = a.out_stride ? a.out_stride : a.row_elems;
  const auto* w = static_cast<const uint8_t*>(a.weights);
  for (uint32_t t = token_begin; t < token_end; ++t) {
    float* out = a.out + uint64_t(t) * stride;
    const uint32_t row = a.ids[t] - a.first_row;  // ids below first_row wrap to huge values
    if (row >= a.n_rows) {
      if (a.part) continue;
      for (uint32_t i = 0; i < a.row_elems; ++i) out[i] = std::numeric_limits<float>::quiet_NaN();
      continue;
    }
    gguf::dequantize(a.type, w + row * row_bytes, out, a.row_elems);
    if (a.scale != 1.0f)
      for (uint32_t i = 0; i < a.row_elems; ++i) out[i] *= a.scale;
  }
}

void rms_norm(const RmsNormArgs& a, uint32_t row_begin, uint32_t row_end, Isa isa) {
  row_kernels(isa).rms_norm(a, row_begin, row_end);
}

void layer_norm(const LayerNormArgs& a, uint32_t row_begin, uint32_t row_end) {
  const uint32_t n = a.n;
  for (uint32_t r = row_begin; r < row_end; ++r) {
    const float* x = a.x + uint64_t(r) * n;
    float* y = a.y + uint64_t(r) * n;
    double sum = 0.0;
    for (uint32_t i = 0; i < n; ++i) sum += x[i];
    const double mean = sum / n;
    double sq = 0.0;  // second pass: large means do not cancel
    for (uint32_t i = 0; i < n; ++i) sq += (x[i] - mean) * (x[i] - mean);
    const float inv = float(1.0 / std::sqrt(sq / n + a.eps));
    const float m = float(mean);
    for (uint32_t i = 0; i < n; ++i) y[i] = (x[i] - m) * inv * a.weight[i] + a.bias[i];
  }
}

void add(const float* a, const float* b, float* out, uint32_t begin, uint32_t end, Isa isa) {
  row_kernels(isa).elementwise(ElementOp::Add, a, b, out, 0.f, begin, end);
}
void mul(const float* a, const float* b, float* out, uint32_t begin, uint32_t end, Isa isa) {
  row_kernels(isa).elementwise(ElementOp::Mul, a, b, out, 0.f, begin, end);
}
void scale(const float* a, float* out, float s, uint32_t begin, uint32_t end, Isa isa) {
  row_kernels(isa).elementwise(ElementOp::Scale, a, nullptr, out, s, begin, end);
}
void softcap(const float* a, float* out, float cap, uint32_t begin, uint32_t end, Isa isa) {
  if (!(cap > 0.f)) throw std::invalid_argument("softcap: cap must be positive");
  row_kernels(isa).elementwise(ElementOp::Softcap, a, nullptr, out, cap, begin, end);
}
void gelu(const float* a, float* out, uint32_t begin, uint32_t end, Isa isa) {
  row_kernels(isa).elementwise(ElementOp::Gelu, a, nullptr, out, 0.f, begin, end);
}
void add_bias(float* x, const float* bias, uint32_t n, uint32_t stride, uint32_t row_begin,
              uint32_t row_end, Isa isa) {
  row_kernels(isa).add_bias(x, bias, n, stride, row_begin, row_end);
}

void glu(const GluArgs& a, uint32_t row_begin, uint32_t row_end, Isa isa) {
  row_kernels(isa).glu(a, row_begin, row_end);
}

namespace {

uint32_t rotated_dims(const RopeParams& p) {
  const uint32_t n_dims = p.n_dims ? p.n_dims : p.head_dim;
  if (p.head_dim == 0 || p.head_dim > detail::kMaxHeadDim || n_dims % 2 != 0 || n_dims > p.head_dim)
    throw std::invalid_argument("rope: head_dim " + std::to_string(p.head_dim) + ", n_dims " +
                                std::to_string(n_dims) + " (even, <= head_dim <= 512)");
  return n_dims;
}

// Per-pair angle per unit of position, in double: positions reach 10^5 and more, where a float
// angle would be off by 10^-2 radians.
std::vector<double> inverse_frequencies(const RopeParams& p, uint32_t n_dims) {
  std::vector<double> f(n_dims / 2);
  for (uint32_t i = 0; i < n_dims / 2; ++i) {
    f[i] = double(p.freq_scale) * std::pow(double(p.freq_base), -2.0 * i / n_dims);
    if (p.freq_factors != nullptr) f[i] /= p.freq_factors[i];
  }
  return f;
}

// cos of every pair, then sin of every pair, at position pos.
void angles(const std::vector<double>& inv_freq, uint32_t pos, float* cs) {
  const size_t half = inv_freq.size();
  for (size_t i = 0; i < half; ++i) {
    const double theta = double(pos) * inv_freq[i];
    cs[i] = float(std::cos(theta));
    cs[half + i] = float(std::sin(theta));
  }
}

// The same for batch token t: by its M-RoPE positions where the parameters give them (pair i in
// section t, h, w of the repeating sections: that position; in a fourth: t; interleaved: h, w
// every third pair, see RopeParams), else at `pos`.
void token_angles(const RopeParams& p, const std::vector<double>& inv_freq, uint32_t t,
                  uint32_t pos, float* cs) {
  const auto& s = p.mrope_sections;
  const uint32_t total = s[0] + s[1] + s[2] + s[3];
  if (p.mrope_pos == nullptr || total == 0) {
    angles(inv_freq, pos, cs);
    return;
  }
  const uint32_t* tp = p.mrope_pos + 3ull * t;
  const size_t half = inv_freq.size();
  for (size_t i = 0; i < half; ++i) {
    const uint32_t sector = static_cast<uint32_t>(i % total);
    const uint32_t at = p.mrope_interleaved    ? (sector % 3 == 1 && sector < 3 * s[1]   ? tp[1]
                                                  : sector % 3 == 2 && sector < 3 * s[2] ? tp[2]
                                                                                         : tp[0])
                        : sector < s[0]        ? tp[0]
                        : sector < s[0] + s[1] ? tp[1]
                        : sector < s[0] + s[1] + s[2] ? tp[2]
                                                      : tp[0];
    const double theta = double(at) * inv_freq[i];
    cs[i] = float(std::cos(theta));
    cs[half + i] = float(std::sin(theta));
  }
}

}  // namespace

void rope(const RopeParams& p, const BatchView& batch, ConstHeadRows src, HeadRows dst,
          uint32_t n_heads, uint32_t token_begin, uint32_t token_end, Isa isa) {
  const uint32_t n_dims = rotated_dims(p), D = p.head_dim;
  const auto& k = row_kernels(isa);
  const std::vector<double> inv_freq = inverse_frequencies(p, n_dims);
  float cs[detail::kMaxHeadDim];
  const uint32_t ss = src.stride ? src.stride : n_heads * D,
                 ds = dst.stride ? dst.stride : n_heads * D;
  for (uint32_t t = token_begin; t < token_end; ++t) {
    const uint32_t pos = batch.token_pos(t);
    token_angles(p, inv_freq, t, pos, cs);
    for (uint32_t h = 0; h < n_heads; ++h) {
      const float* from = src.data + uint64_t(t) * ss + h * D;
      float* to = dst.data + uint64_t(t) * ds + h * D;
      if (p.rotate) {
        k.rope_row(from, to, cs, D, n_dims, p.neox);
      } else if (to != from) {
        std::memmove(to, from, 4ull * D);
      }
    }
    if (p.temp_scale != 0.0f && p.temp_floor > 0) {
      const double at = double(pos) + p.temp_offset;
      const float temp = float(std::log(std::floor(at / p.temp_floor) + 1.0) * p.temp_scale + 1.0);
      float* row = dst.data + uint64_t(t) * ds;
      for (uint32_t i = 0; i < n_heads * D; ++i) row[i] *= temp;
    }
  }
}

void write_kv(const RopeParams* rope, const BatchView& batch, ConstHeadRows src, uint32_t head_dim,
              const CacheRegion& cache, uint32_t token_begin, uint32_t token_end, Isa isa) {
  const uint32_t n_kv = cache.n_kv_heads, B = cache.block_size, D = head_dim;
  if (rope != nullptr && rope->head_dim != head_dim)
    throw std::invalid_argument("write_kv: rope head_dim differs from the cache's");
  if (B == 0 || n_kv == 0 || D == 0 || D > detail::kMaxHeadDim ||
      !kv::cache_type_fits(cache.type, D))
    throw std::invalid_argument("write_kv: bad cache shape");
  const uint32_t row_halves = 2 * kv::row_words(cache.type, D);
  const auto& k = row_kernels(isa);
  const uint32_t n_dims = rope ? rotated_dims(*rope) : 0;
  const std::vector<double> inv_freq =
      rope ? inverse_frequencies(*rope, n_dims) : std::vector<double>{};
  float cs[detail::kMaxHeadDim], row[detail::kMaxHeadDim];
  const uint32_t ss = src.stride ? src.stride : n_kv * D;
  for (uint32_t t = token_begin; t < token_end; ++t) {
    const uint32_t pos = batch.token_pos(t);
    const uint64_t block = batch.token_block(t, pos, B);
    if (rope != nullptr) token_angles(*rope, inv_freq, t, pos, cs);
    for (uint32_t h = 0; h < n_kv; ++h) {
      const float* s = src.data + uint64_t(t) * ss + h * D;
      uint16_t* dst = cache.data + ((block * n_kv + h) * B + pos % B) * row_halves;
      if (rope != nullptr) {
        k.rope_row(s, row, cs, D, n_dims, rope->neox);
        s = row;
      }
      if (cache.type == kv::CacheType::F16)
        k.to_f16(s, dst, D);
      else
        quantize_kv_row(cache.type, s, D, reinterpret_cast<uint32_t*>(dst));
    }
  }
}

void pool_rows(PoolMode mode, const BatchView& batch, const float* x, uint32_t n, float* out,
               uint32_t seq_begin, uint32_t seq_end) {
  for (uint32_t s = seq_begin; s < seq_end; ++s) {
    const uint32_t start = batch.seq_q_start(s), len = batch.seq_q_len(s);
    float* o = out + uint64_t(s) * n;
    if (mode == PoolMode::Mean) {
      for (uint32_t i = 0; i < n; ++i) o[i] = 0.f;
      for (uint32_t t = 0; t < len; ++t) {
        const float* r = x + uint64_t(start + t) * n;
        for (uint32_t i = 0; i < n; ++i) o[i] += r[i];
      }
      const float inv = 1.f / float(len ? len : 1);
      for (uint32_t i = 0; i < n; ++i) o[i] *= inv;
    } else {
      const uint32_t t = start + (mode == PoolMode::First || len == 0 ? 0 : len - 1);
      const float* r = x + uint64_t(t) * n;
      for (uint32_t i = 0; i < n; ++i) o[i] = r[i];
    }
  }
}

void argmax(const float* logits, uint32_t n, uint32_t stride, uint32_t* out, uint32_t row_begin,
            uint32_t row_end, Isa isa) {
  const uint32_t s = stride ? stride : n;
  const auto& k = row_kernels(isa);
  for (uint32_t r = row_begin; r < row_end; ++r) out[r] = k.argmax(logits + uint64_t(r) * s, n);
}

}  // namespace vkllm::cpu
