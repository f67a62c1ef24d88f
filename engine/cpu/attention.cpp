#include "engine/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/cpu/attention_kernels.h"

namespace vkllm::cpu {

namespace {

void check(const AttentionArgs& a) {
  if (a.n_kv_heads == 0 || a.n_q_heads == 0 || a.n_q_heads % a.n_kv_heads != 0)
    throw std::invalid_argument("attention: " + std::to_string(a.n_q_heads) + " query heads over " +
                                std::to_string(a.n_kv_heads) + " KV heads");
  if (a.head_dim == 0 || a.head_dim > 512)
    throw std::invalid_argument("attention: head_dim " + std::to_string(a.head_dim) +
                                " (1 to 512)");
  if (a.block_size == 0) throw std::invalid_argument("attention: block_size 0");
  if (!kv::cache_type_fits(a.cache_type, a.head_dim))
    throw std::invalid_argument("attention: a " + std::string(kv::cache_type_name(a.cache_type)) +
                                " cache needs head_dim a multiple of 32");
  if (a.kv_splits == 0 || (a.kv_splits > 1 && a.partials == nullptr))
    throw std::invalid_argument("attention: kv_splits " + std::to_string(a.kv_splits) +
                                " needs partials when above 1");
}

uint32_t tiles(uint32_t q_len, uint32_t tile) {
  return (q_len + tile - 1) / tile;
}

// Split-K partials: unnormalised output rows of split s, then (max, sum) pairs of every row.
uint64_t partial_row(const AttentionArgs& a, uint32_t split, uint32_t t, uint32_t h) {
  return (uint64_t(split) * a.batch.n_tokens + t) * a.n_q_heads + h;
}
float* partial_out(const AttentionArgs& a, uint32_t split, uint32_t t, uint32_t h) {
  return a.partials + partial_row(a, split, t, h) * a.head_dim;
}
float* partial_ml(const AttentionArgs& a, uint32_t split, uint32_t t, uint32_t h) {
  return a.partials + uint64_t(a.kv_splits) * a.batch.n_tokens * a.n_q_heads * a.head_dim +
         partial_row(a, split, t, h) * 2;
}

detail::AttendFn kernel(Isa isa) {
  switch (usable_isa(isa)) {
    case Isa::Amx:  // no tile code here: AMX machines run the AVX-512 kernels
    case Isa::Avx512:
      return detail::kAttendAvx512;
    case Isa::Avx2:
      return detail::kAttendAvx2;
    default:
      return detail::kAttendPortable;
  }
}

}  // namespace

uint32_t attention_tile_tokens(const AttentionArgs& a) {
  check(a);
  const uint32_t r = a.n_q_heads / a.n_kv_heads;
  return r >= 64 ? 1 : 64 / r;
}

uint32_t attention_work_units(const AttentionArgs& a) {
  const uint32_t tile = attention_tile_tokens(a);
  uint32_t units = 0;
  for (uint32_t s = 0; s < a.batch.n_seqs; ++s)
    units += tiles(a.batch.seq_q_len(s), tile) * a.n_kv_heads * a.kv_splits;
  return units;
}

void attention(const AttentionArgs& a, uint32_t unit_begin, uint32_t unit_end, Isa isa) {
  const uint32_t tile = attention_tile_tokens(a);
  if (unit_begin >= unit_end) return;
  const detail::AttendFn attend = kernel(isa);
  const uint32_t R = a.n_q_heads / a.n_kv_heads;
  std::vector<float> scratch(detail::attention_scratch_floats(tile * R, a.head_dim));
  const uint32_t qs = a.q.stride ? a.q.stride : a.n_q_heads * a.head_dim;
  const uint32_t os = a.out.stride ? a.out.stride : a.n_q_heads * a.head_dim;
  // Find the sequence holding unit_begin, then walk units in order.
  const uint32_t per_tile = a.n_kv_heads * a.kv_splits;
  uint32_t s = 0, first = 0;
  for (; s < a.batch.n_seqs; ++s) {
    const uint32_t n = tiles(a.batch.seq_q_len(s), tile) * per_tile;
    if (unit_begin < first + n) break;
    first += n;
  }
  for (uint32_t u = unit_begin; u < unit_end && s < a.batch.n_seqs;) {
    const uint32_t q_len = a.batch.seq_q_len(s);
    const uint32_t n = tiles(q_len, tile) * per_tile;
    for (; u < unit_end && u < first + n; ++u) {
      const uint32_t i = (u - first) / per_tile, rest = (u - first) % per_tile;
      const uint32_t t0 = a.batch.seq_q_start(s) + i * tile;
      detail::AttentionGroup g;
      g.n_tokens = q_len - i * tile < tile ? q_len - i * tile : tile;
      g.kv_head = rest / a.kv_splits;
      g.split = rest % a.kv_splits;
      g.n_splits = a.kv_splits;
      g.kv_len = a.batch.seq_kv_len(s);
      g.open_from = a.open_span ? a.batch.seq_open(s) : 0xFFFFFFFFu;  // kv::kNoOpenSpan
      g.table = a.batch.seq_table(s);
      g.pos = a.batch.words.data() + a.batch.n_tokens + t0;
      g.q = a.q.data + uint64_t(t0) * qs;
      g.q_stride = qs;
      if (a.kv_splits > 1) {
        g.out = partial_out(a, g.split, t0, 0);
        g.out_stride = a.n_q_heads * a.head_dim;
        g.ml = partial_ml(a, g.split, t0, 0);
        g.ml_stride = a.n_q_heads * 2;
      } else {
        g.out = a.out.data + uint64_t(t0) * os;
        g.out_stride = os;
      }
      attend(a, g, scratch.data());
    }
    first += n;
    ++s;
  }
}

uint64_t attention_partials_floats(const AttentionArgs& a) {
  return uint64_t(a.kv_splits) * a.batch.n_tokens * a.n_q_heads * (a.head_dim + 2);
}

void attention_reduce(const AttentionArgs& a, uint32_t token_begin, uint32_t token_end) {
  check(a);
  const uint32_t D = a.head_dim, S = a.kv_splits;
  const uint32_t os = a.out.stride ? a.out.stride : a.n_q_heads * D;
  std::vector<float> acc(D);
  for (uint32_t t = token_begin; t < token_end; ++t)
    for (uint32_t h = 0; h < a.n_q_heads; ++h) {
      float m = -std::numeric_limits<float>::infinity();
      for (uint32_t s = 0; s < S; ++s) m = std::max(m, partial_ml(a, s, t, h)[0]);
      std::fill(acc.begin(), acc.end(), 0.f);
      float l = 0.f;
      for (uint32_t s = 0; s < S; ++s) {
        const float* ml = partial_ml(a, s, t, h);
        if (ml[0] == -std::numeric_limits<float>::infinity()) continue;  // an empty slice
        const float w = std::exp(ml[0] - m);
        l += ml[1] * w;
        const float* o = partial_out(a, s, t, h);
        for (uint32_t d = 0; d < D; ++d) acc[d] += o[d] * w;
      }
      float* dst = a.out.data + uint64_t(t) * os + uint64_t(h) * D;
      float inv = l > 0.f ? 1.f / l : 0.f;
      if (a.sinks != nullptr) inv = detail::sink_scaled_inverse(m, l, a.sinks[h]);
      for (uint32_t d = 0; d < D; ++d) dst[d] = acc[d] * inv;
    }
}

uint32_t attention_suggested_splits(const AttentionArgs& a, uint32_t max_kv_len, uint32_t threads) {
  AttentionArgs one = a;
  one.kv_splits = 1;
  const uint32_t units = attention_work_units(one);
  if (units == 0 || units >= threads) return 1;
  const uint32_t want = (2 * threads + units - 1) / units;
  return std::clamp(std::min(want, max_kv_len / 256), 1u, 64u);
}

}  // namespace vkllm::cpu
