// The CPU small kernels (engine/cpu/ops.h) on every code path this machine runs, against scalar
// double-precision references on fresh random inputs, each call split into two work ranges.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>

#include "engine/cpu/ops.h"
#include "engine/gguf/quants.h"
#include "engine/kv/kv_layout.h"
#include "tests/unit/cpu/cpu_test_support.h"

namespace vkllm::cpu::test {
namespace {

// Calls f(begin, end) on [0, split) and [split, n) for a random split.
template <typename F>
void in_two_ranges(SeededRng& rng, uint32_t n, F&& f) {
  const uint32_t split = rng.below(n + 1);
  f(0u, split);
  f(split, n);
}

TEST(CpuOps, RmsNormWithWeightResidualStridesAndInPlace) {
  SeededRng rng;
  for (Isa isa : testable_isas()) {
    SCOPED_TRACE(std::string(isa_name(isa)));
    for (uint32_t n : {7u, 64u, 2048u + 3u}) {
      for (int variant = 0; variant < 4; ++variant) {
        const bool weight = variant & 1, residual = variant & 2;
        const uint32_t rows = 5, xs = n + 3, ys = variant == 3 ? xs : n + 1;
        auto x = rng.vec(size_t(rows) * xs, -3.f, 3.f), r = rng.vec(x.size()), w = rng.vec(n);
        auto x0 = x;
        std::vector<float> y(size_t(rows) * ys, NAN);
        RmsNormArgs a{.x = x.data(),
                      .residual = residual ? r.data() : nullptr,
                      .weight = weight ? w.data() : nullptr,
                      .y = variant == 3 ? x.data() : y.data(),
                      .n = n,
                      .x_stride = xs,
                      .y_stride = ys,
                      .eps = 1e-6f};
        in_two_ranges(rng, rows, [&](uint32_t b, uint32_t e) { rms_norm(a, b, e, isa); });
        const std::vector<float>& got = variant == 3 ? x : y;
        for (uint32_t row = 0; row < rows; ++row) {
          std::vector<double> h(n), want(n);
          double ss = 0;
          for (uint32_t i = 0; i < n; ++i) {
            h[i] = double(x0[row * xs + i]) + (residual ? double(r[row * xs + i]) : 0.0);
            ss += h[i] * h[i];
          }
          const double inv = 1.0 / std::sqrt(ss / n + 1e-6);
          for (uint32_t i = 0; i < n; ++i) want[i] = h[i] * inv * (weight ? w[i] : 1.0);
          EXPECT_TRUE(near_all({got.data() + row * ys, n}, want, 1e-5, 1e-5))
              << "n=" << n << " variant=" << variant << " row=" << row;
          if (residual && variant != 3) {
            EXPECT_TRUE(near_all({x.data() + row * xs, n}, h, 1e-6, 1e-6)) << "residual sum";
          }
        }
      }
    }
  }
}

TEST(CpuOps, LayerNormWithWeightAndBias) {
  SeededRng rng;
  const uint32_t n = 384 + rng.below(8), rows = 4;
  auto x = rng.vec(size_t(rows) * n, 5.f, 7.f), w = rng.vec(n), b = rng.vec(n);  // large mean
  std::vector<float> y(x.size());
  LayerNormArgs a{.x = x.data(), .weight = w.data(), .bias = b.data(), .y = y.data(), .n = n};
  in_two_ranges(rng, rows, [&](uint32_t lo, uint32_t hi) { layer_norm(a, lo, hi); });
  for (uint32_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (uint32_t i = 0; i < n; ++i) mean += x[r * n + i];
    mean /= n;
    for (uint32_t i = 0; i < n; ++i) var += (x[r * n + i] - mean) * (x[r * n + i] - mean);
    var /= n;
    std::vector<double> want(n);
    for (uint32_t i = 0; i < n; ++i)
      want[i] = (x[r * n + i] - mean) / std::sqrt(var + 1e-12) * w[i] + b[i];
    EXPECT_TRUE(near_all({y.data() + r * n, n}, want, 2e-5, 2e-5)) << "row " << r;
  }
  layer_norm({.x = x.data(), .weight = w.data(), .bias = b.data(), .y = x.data(), .n = n}, 0, 1);
  EXPECT_TRUE(std::equal(x.begin(), x.begin() + n, y.begin())) << "in place differs";
}

double gelu_ref(double x) {
  return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * x * (1.0 + 0.044715 * x * x)));
}

TEST(CpuOps, ElementwiseOpsOnTheirRangeOnly) {
  SeededRng rng;
  for (Isa isa : testable_isas()) {
    SCOPED_TRACE(std::string(isa_name(isa)));
    const uint32_t n = 1000 + rng.below(100), begin = rng.below(50), end = n - rng.below(50);
    auto a = rng.vec(n, -12.f, 12.f), b = rng.vec(n);
    const float s = rng.uniform(0.5f, 2.f), cap = rng.uniform(5.f, 30.f);
    for (int op = 0; op < 5; ++op) {
      for (bool in_place : {false, true}) {
        std::vector<float> out = in_place ? a : std::vector<float>(n, -7.f);
        const float* src = in_place ? out.data() : a.data();
        switch (op) {
          case 0:
            add(src, b.data(), out.data(), begin, end, isa);
            break;
          case 1:
            mul(src, b.data(), out.data(), begin, end, isa);
            break;
          case 2:
            scale(src, out.data(), s, begin, end, isa);
            break;
          case 3:
            softcap(src, out.data(), cap, begin, end, isa);
            break;
          default:
            gelu(src, out.data(), begin, end, isa);
            break;
        }
        std::vector<double> want(n);
        for (uint32_t i = 0; i < n; ++i) {
          const double x = a[i], y = b[i];
          if (i < begin || i >= end) {
            want[i] = in_place ? x : -7.0;
            continue;
          }
          want[i] = op == 0   ? x + y
                    : op == 1 ? x * y
                    : op == 2 ? x * s
                    : op == 3 ? cap * std::tanh(x / cap)
                              : gelu_ref(x);
        }
        EXPECT_TRUE(near_all(out, want, 2e-6 * (op == 3 ? cap : 1.f), 2e-6))
            << "op " << op << (in_place ? " in place" : "");
      }
    }
    // Bias over rows with a padded stride.
    const uint32_t rows = 3, m = 70, stride = 75;
    auto x = rng.vec(rows * stride), bias = rng.vec(m);
    auto x0 = x;
    in_two_ranges(rng, rows, [&](uint32_t lo, uint32_t hi) {
      add_bias(x.data(), bias.data(), m, stride, lo, hi, isa);
    });
    std::vector<double> want(x0.begin(), x0.end());
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t i = 0; i < m; ++i) want[r * stride + i] += bias[i];
    EXPECT_TRUE(near_all(x, want, 1e-6, 0));
  }
}

TEST(CpuOps, GluSiluAndGeluOverAFusedGateUpBuffer) {
  SeededRng rng;
  for (Isa isa : testable_isas()) {
    SCOPED_TRACE(std::string(isa_name(isa)));
    for (GluActivation act : {GluActivation::Silu, GluActivation::GeluTanh}) {
      const uint32_t n = 200 + rng.below(60), rows = 6;
      auto fused = rng.vec(size_t(rows) * 2 * n, -10.f, 10.f);  // row r: gate | up
      std::vector<float> out(size_t(rows) * (n + 5), NAN);
      GluArgs a{.gate = fused.data(),
                .up = fused.data() + n,
                .out = out.data(),
                .n = n,
                .act = act,
                .gate_stride = 2 * n,
                .up_stride = 2 * n,
                .out_stride = n + 5};
      in_two_ranges(rng, rows, [&](uint32_t lo, uint32_t hi) { glu(a, lo, hi, isa); });
      for (uint32_t r = 0; r < rows; ++r) {
        std::vector<double> want(n);
        for (uint32_t i = 0; i < n; ++i) {
          const double g = fused[r * 2 * n + i], u = fused[r * 2 * n + n + i];
          want[i] = (act == GluActivation::Silu ? g / (1.0 + std::exp(-g)) : gelu_ref(g)) * u;
        }
        EXPECT_TRUE(near_all({out.data() + r * (n + 5), n}, want, 1e-5, 1e-5)) << "row " << r;
      }
    }
  }
}

TEST(CpuOps, ArgmaxLowestIndexOnTiesAndNanNeverWins) {
  SeededRng rng;
  const uint32_t n = 5000 + rng.below(1000), rows = 5, stride = n + 3;
  auto logits = rng.vec(size_t(rows) * stride, -5.f, 5.f);
  // Row 1: a tie for the maximum; row 2: NaNs; row 3: all -inf; row 4: all NaN.
  const uint32_t a = rng.below(n / 2), b = n / 2 + rng.below(n / 2);
  logits[stride + a] = logits[stride + b] = 9.f;
  logits[2 * stride + rng.below(n)] = NAN;
  logits[2 * stride] = NAN;
  std::fill_n(logits.begin() + 3 * stride, n, -std::numeric_limits<float>::infinity());
  std::fill_n(logits.begin() + 4 * stride, n, NAN);
  for (Isa isa : testable_isas()) {
    SCOPED_TRACE(std::string(isa_name(isa)));
    std::vector<uint32_t> got(rows, 12345);
    in_two_ranges(rng, rows, [&](uint32_t lo, uint32_t hi) {
      argmax(logits.data(), n, stride, got.data(), lo, hi, isa);
    });
    for (uint32_t r = 0; r < 3; ++r) {
      uint32_t want = 0;
      float best = -INFINITY;
      bool found = false;
      for (uint32_t i = 0; i < n; ++i) {
        const float v = logits[r * stride + i];
        if (!std::isnan(v) && (!found || v > best)) {
          best = v, want = i, found = true;
        }
      }
      EXPECT_EQ(got[r], want) << "row " << r;
    }
    EXPECT_EQ(got[1], a);
    EXPECT_EQ(got[3], 0u);
    EXPECT_EQ(got[4], 0u);
  }
}

TEST(CpuOps, GetRowsDequantizesScalesAndFlagsBadIds) {
  SeededRng rng;
  using gguf::TensorType;
  for (TensorType type :
       {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q4_0, TensorType::Q8_0,
        TensorType::Q4_K, TensorType::Q6_K, TensorType::Q5_K, TensorType::Q2_K}) {
    SCOPED_TRACE(std::string(gguf::type_name(type)));
    const uint32_t k = 512, n_rows = 9;
    auto w = rng.vec(size_t(k) * n_rows);
    const size_t rb = gguf::row_bytes(type, k);
    std::vector<uint8_t> q(rb * n_rows);
    gguf::quantize(type, w.data(), q.data(), w.size());
    std::vector<float> table(w.size());
    gguf::dequantize(type, q.data(), table.data(), w.size());
    std::vector<uint32_t> ids = {rng.below(n_rows), n_rows - 1, 0, n_rows + 5, rng.below(n_rows)};
    const uint32_t T = ids.size(), stride = k + 8;
    std::vector<float> out(size_t(T) * stride, -3.f);
    const float scale = rng.uniform(0.5f, 3.f);
    GetRowsArgs a{.type = type,
                  .weights = q.data(),
                  .row_elems = k,
                  .n_rows = n_rows,
                  .ids = ids.data(),
                  .out = out.data(),
                  .out_stride = stride,
                  .scale = scale};
    in_two_ranges(rng, T, [&](uint32_t lo, uint32_t hi) { get_rows(a, lo, hi); });
    for (uint32_t t = 0; t < T; ++t)
      for (uint32_t i = 0; i < k; ++i) {
        const float got = out[t * stride + i];
        if (ids[t] >= n_rows) {
          ASSERT_TRUE(std::isnan(got)) << "t=" << t;
        } else {
          ASSERT_NEAR(got, double(table[ids[t] * k + i]) * scale, 1e-6 * scale) << "t=" << t;
        }
      }
    // One part of a table split by rows: rows 4.. only; other tokens stay unwritten.
    std::vector<float> part(size_t(T) * stride, -3.f);
    a.weights = q.data() + 4 * rb;
    a.n_rows = n_rows - 4;
    a.first_row = 4;
    a.part = true;
    a.out = part.data();
    get_rows(a, 0, T);
    for (uint32_t t = 0; t < T; ++t) {
      const bool mine = ids[t] >= 4 && ids[t] < n_rows;
      EXPECT_EQ(part[t * stride], mine ? float(table[ids[t] * k] * scale) : -3.f) << "t=" << t;
    }
  }
  GetRowsArgs bad{.type = TensorType::Q8_0, .row_elems = 40};
  EXPECT_THROW(get_rows(bad, 0, 1), std::invalid_argument);
}

// Scalar RoPE reference on one head row (double precision).
void rope_ref(std::vector<double>& x, uint32_t n_dims, bool neox, double base, double fscale,
              const float* factors, uint32_t pos) {
  std::vector<double> in = x;
  for (uint32_t i = 0; i < n_dims / 2; ++i) {
    double theta = double(pos) * fscale * std::pow(base, -2.0 * i / n_dims);
    if (factors) theta /= factors[i];
    const uint32_t a = neox ? i : 2 * i, b = neox ? i + n_dims / 2 : 2 * i + 1;
    x[a] = in[a] * std::cos(theta) - in[b] * std::sin(theta);
    x[b] = in[a] * std::sin(theta) + in[b] * std::cos(theta);
  }
}

TEST(CpuOps, RopeNormalAndNeoxWithFactorsPartialRotationAndPositionsFromTheBatch) {
  SeededRng rng;
  struct Case {
    uint32_t head_dim, n_dims, n_heads;
    bool neox, factors;
  };
  for (Isa isa : testable_isas()) {
    SCOPED_TRACE(std::string(isa_name(isa)));
    for (Case c : {Case{64, 64, 3, false, false}, Case{128, 128, 2, true, true},
                   Case{80, 32, 5, true, false}, Case{128, 96, 4, false, true}}) {
      // Two sequences: one prefilling 7 tokens from position 0, one decoding far later.
      std::vector<uint32_t> t0 = {0}, t1(8000);
      std::iota(t1.begin(), t1.end(), 1);
      std::vector<kv::BatchSequence> seqs = {{t0, 7, 7}, {t1, 1, 100000 + rng.below(20000)}};
      kv::BatchMeta meta = kv::build_batch_meta(seqs);
      BatchView batch{meta.words, meta.n_tokens, meta.n_seqs};
      const uint32_t T = meta.n_tokens, D = c.head_dim, stride = c.n_heads * D + 8;
      auto x = rng.vec(size_t(T) * stride);
      std::vector<float> factors(c.n_dims / 2);
      for (float& f : factors) f = rng.uniform(1.f, 8.f);
      const float base = c.neox ? 1000000.f : 10000.f, fscale = c.factors ? 1.f : 0.5f;
      RopeParams p{.head_dim = D,
                   .n_dims = c.n_dims,
                   .neox = c.neox,
                   .freq_base = base,
                   .freq_scale = fscale,
                   .freq_factors = c.factors ? factors.data() : nullptr};
      std::vector<float> out(size_t(T) * c.n_heads * D, NAN), inplace = x;
      in_two_ranges(rng, T, [&](uint32_t lo, uint32_t hi) {
        rope(p, batch, {x.data(), stride}, {out.data(), 0}, c.n_heads, lo, hi, isa);
        rope(p, batch, {inplace.data(), stride}, {inplace.data(), stride}, c.n_heads, lo, hi, isa);
      });
      std::vector<double> want(out.size()), want_inplace(x.begin(), x.end());
      for (uint32_t t = 0; t < T; ++t)
        for (uint32_t h = 0; h < c.n_heads; ++h) {
          std::vector<double> row(x.begin() + t * stride + h * D,
                                  x.begin() + t * stride + (h + 1) * D);
          rope_ref(row, c.n_dims, c.neox, base, fscale, c.factors ? factors.data() : nullptr,
                   meta.words[T + t]);
          std::copy(row.begin(), row.end(), want.begin() + (t * c.n_heads + h) * D);
          std::copy(row.begin(), row.end(), want_inplace.begin() + t * stride + h * D);
        }
      SCOPED_TRACE("head_dim=" + std::to_string(D) + " n_dims=" + std::to_string(c.n_dims));
      EXPECT_TRUE(near_all(out, want, 1e-5, 0));
      EXPECT_TRUE(near_all(inplace, want_inplace, 1e-5, 0));
    }
  }
}

TEST(CpuOps, WriteKvRotatesKAndCopiesVIntoShuffledBlocks) {
  SeededRng rng;
  for (Isa isa : testable_isas()) {
    SCOPED_TRACE(std::string(isa_name(isa)));
    for (uint32_t block_size : {16u, 7u}) {
      const uint32_t head_dim = 64, n_kv = 2, num_blocks = 40;
      std::vector<uint32_t> ids(num_blocks);
      std::iota(ids.begin(), ids.end(), 0);
      std::shuffle(ids.begin(), ids.end(), rng.gen());
      std::vector<uint32_t> tab0(ids.begin(), ids.begin() + 4),
          tab1(ids.begin() + 4, ids.begin() + 12);
      const uint32_t kv1 = 2 * block_size + 1 + rng.below(5 * block_size);
      std::vector<kv::BatchSequence> seqs = {{tab0, 17, 17}, {tab1, 3, kv1}};
      kv::BatchMeta meta = kv::build_batch_meta(seqs, block_size);
      BatchView batch{meta.words, meta.n_tokens, meta.n_seqs};
      const uint32_t T = meta.n_tokens;
      kv::KvLayout layout{num_blocks, n_kv, block_size, head_dim};
      auto k = rng.vec(size_t(T) * n_kv * head_dim), v = rng.vec(k.size());
      std::vector<uint16_t> kc(layout.region_elements(), 0), vc(kc.size(), 0);
      RopeParams p{.head_dim = head_dim, .neox = true};
      in_two_ranges(rng, T, [&](uint32_t lo, uint32_t hi) {
        write_kv(&p, batch, {k.data(), 0}, head_dim, {kc.data(), n_kv, block_size}, lo, hi, isa);
        write_kv(nullptr, batch, {v.data(), 0}, head_dim, {vc.data(), n_kv, block_size}, lo, hi,
                 isa);
      });
      std::vector<bool> written(kc.size(), false);
      for (uint32_t t = 0; t < T; ++t) {
        const uint32_t s = meta.words[t], pos = meta.words[T + t];
        const auto& table = s == 0 ? tab0 : tab1;
        for (uint32_t h = 0; h < n_kv; ++h) {
          std::vector<double> row(k.begin() + (t * n_kv + h) * head_dim,
                                  k.begin() + (t * n_kv + h + 1) * head_dim);
          rope_ref(row, head_dim, true, 10000.0, 1.0, nullptr, pos);
          for (uint32_t d = 0; d < head_dim; ++d) {
            const uint64_t e = layout.element(table[pos / block_size], h, pos % block_size, d);
            written[e] = true;
            // Rounded to nearest: within half an f16 ulp (2^-11 relative) of the exact value.
            ASSERT_NEAR(f16_value(kc[e]), row[d], std::fabs(row[d]) * 4.9e-4 + 1e-7)
                << "t=" << t << " h=" << h << " d=" << d;
            ASSERT_EQ(vc[e], f16_bits(v[(t * n_kv + h) * head_dim + d]))
                << "t=" << t << " h=" << h << " d=" << d;
          }
        }
      }
      for (uint64_t e = 0; e < written.size(); ++e)
        if (!written[e]) {
          ASSERT_TRUE(kc[e] == 0 && vc[e] == 0) << "stray write at " << e;
        }
    }
  }
}

TEST(CpuOps, PoolRowsMeanFirstLastPerSequence) {
  SeededRng rng;
  std::vector<uint32_t> tab(64, 0);
  std::vector<kv::BatchSequence> seqs = {{tab, 5, 5}, {tab, 1, 1}, {tab, 3 + rng.below(9), 20}};
  kv::BatchMeta meta = kv::build_batch_meta(seqs);
  BatchView batch{meta.words, meta.n_tokens, meta.n_seqs};
  const uint32_t n = 33, T = meta.n_tokens, S = meta.n_seqs;
  auto x = rng.vec(size_t(T) * n);
  for (PoolMode mode : {PoolMode::Mean, PoolMode::First, PoolMode::Last}) {
    std::vector<float> out(size_t(S) * n, NAN);
    in_two_ranges(rng, S, [&](uint32_t lo, uint32_t hi) {
      pool_rows(mode, batch, x.data(), n, out.data(), lo, hi);
    });
    std::vector<double> want(out.size(), 0.0);
    uint32_t start = 0;
    for (uint32_t s = 0; s < S; ++s) {
      const uint32_t len = seqs[s].q_len;
      for (uint32_t i = 0; i < n; ++i) {
        if (mode == PoolMode::Mean) {
          for (uint32_t t = 0; t < len; ++t) want[s * n + i] += x[(start + t) * n + i];
          want[s * n + i] /= len;
        } else {
          want[s * n + i] = x[(start + (mode == PoolMode::First ? 0 : len - 1)) * n + i];
        }
      }
      start += len;
    }
    EXPECT_TRUE(near_all(out, want, 1e-6, 1e-6)) << "mode " << int(mode);
  }
}

TEST(CpuOps, IsaSelection) {
  Isa isa;
  EXPECT_TRUE(parse_isa("scalar", isa));
  EXPECT_EQ(isa, Isa::Portable);
  EXPECT_TRUE(parse_isa("avx512", isa));
  EXPECT_EQ(isa, Isa::Avx512);
  EXPECT_TRUE(parse_isa("amx", isa));
  EXPECT_EQ(isa, Isa::Amx);
  EXPECT_FALSE(parse_isa("sse9", isa));
  EXPECT_LE(uint8_t(selected_isa()), uint8_t(supported_isa()));
  EXPECT_EQ(usable_isa(Isa::Amx), supported_isa());
  EXPECT_LE(uint8_t(usable_isa(Isa::Avx512)), uint8_t(Isa::Avx512));
  EXPECT_EQ(usable_isa(Isa::Portable), Isa::Portable);
}

// The cap VKLLM_CPU_ISA sets (through the configuration module) forces a lower path and never
// raises one above what the CPU has.
TEST(CpuIsa, TheCapForcesThePortablePath) {
  set_isa_cap(Isa::Portable);
  EXPECT_EQ(selected_isa(), Isa::Portable);
  set_isa_cap(Isa::Avx2);
  EXPECT_EQ(selected_isa(), usable_isa(Isa::Avx2));
  set_isa_cap(Isa::Avx512);  // turns AMX off where the CPU has it
  EXPECT_EQ(selected_isa(), usable_isa(Isa::Avx512));
  set_isa_cap(Isa::Amx);
  EXPECT_EQ(selected_isa(), supported_isa());
}

}  // namespace
}  // namespace vkllm::cpu::test
