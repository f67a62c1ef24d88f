// RMSNorm (and its fused gate), element-wise ops, GLU, argmax and RoPE against scalar CPU
// references.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "engine/cpu/ops.h"
#include "engine/kv/kv_layout.h"
#include "engine/vulkan/matmul_ops.h"
#include "engine/vulkan/ops.h"
#include "tests/engine/kernel_test_support.h"

namespace vkllm::test {
namespace {

using vk::BufferSlice;
namespace ops = vk::ops;

TEST(SmallKernels, RmsNormWithOptionalResidualWeightAndF16Copy) {
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  // 16384: the register-blocked kernel's widest row (512 blocks of 32); 16416: one block more,
  // back on the looping kernel.
  for (uint32_t n : {1u, 7u, 64u, 1000u + rng.below(100), 4096u, 16384u, 16416u}) {
    for (int mode = 0; mode < 3; ++mode) {  // 0: plain, 1: +residual, 2: no weight
      vk::Arena arena = make_arena();
      const uint32_t rows = 1 + rng.below(4);
      auto x = random_vector(rng, size_t(n) * rows, -2.f, 2.f);
      auto r = random_vector(rng, size_t(n) * rows);
      auto w = random_vector(rng, n, 0.5f, 1.5f);
      const float eps = 1e-6f;
      BufferSlice dx = to_device(arena, x), dr = to_device(arena, r), dw = to_device(arena, w);
      BufferSlice dy = device_filled<float>(arena, size_t(n) * rows);
      // The f16 copy for the tensor-core GEMM, where the norm can write one: with the residual,
      // and without it on the narrowest row (the other rows keep the kernel without the copy).
      const bool f16 = ops::rms_norm_writes_f16(n, vk_context().device().caps()) &&
                       (mode == 1 || (mode == 0 && n == 64));
      BufferSlice dh = f16 ? device_filled<uint16_t>(arena, size_t(n) * rows) : BufferSlice{};
      run([&](vk::CommandRecorder& rec) {
        ops::rms_norm(rec, pc,
                      {.x = dx,
                       .residual = mode == 1 ? dr : BufferSlice{},
                       .weight = mode == 2 ? BufferSlice{} : dw,
                       .y = dy,
                       .n = n,
                       .n_rows = rows,
                       .x_stride = 0,
                       .y_stride = 0,
                       .eps = eps,
                       .f16 = dh});
      });
      std::vector<float> want_y(x.size()), want_x = x;
      for (uint32_t row = 0; row < rows; ++row) {
        double ss = 0;
        for (uint32_t i = 0; i < n; ++i) {
          if (mode == 1) want_x[row * n + i] += r[row * n + i];
          ss += double(want_x[row * n + i]) * want_x[row * n + i];
        }
        const double inv = 1.0 / std::sqrt(ss / n + eps);
        for (uint32_t i = 0; i < n; ++i)
          want_y[row * n + i] = float(want_x[row * n + i] * inv * (mode == 2 ? 1.0 : w[i]));
      }
      SCOPED_TRACE("n=" + std::to_string(n) + " rows=" + std::to_string(rows) +
                   " mode=" + std::to_string(mode) + " f16=" + std::to_string(f16));
      const std::vector<float> y = from_device<float>(dy, want_y.size());
      EXPECT_TRUE(near_all(y, want_y, 1e-5, 1e-4));
      EXPECT_TRUE(near_all(from_device<float>(dx, x.size()), want_x, 0, 0));
      if (f16) {
        EXPECT_TRUE(f16_copy_matches(dh, y));
      }
    }
  }
}

// Qwen3.5's gated norm in one dispatch: each head row normalised with the weight, then times
// silu of its gate, the gate rows strided and offset within a wider buffer (the in-projection's
// z part), every `group` head rows one gate row; in place, with and without the q8 copy, which
// must be exactly what quantizing y in its own pass gives.
TEST(SmallKernels, RmsNormWithFusedGate) {
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  if (!ops::rms_norm_fuses_gate(128, 8, 3 * 128 + 12, vk_context().device().caps()))
    GTEST_SKIP() << "no subgroup arithmetic";
  for (bool q8 : {false, true}) {
    vk::Arena arena = make_arena();
    const uint32_t n = 128, group = 3, tokens = 2 + rng.below(3), rows = tokens * group;
    const uint32_t g_off = 8, g_stride = group * n + 12;
    auto x = random_vector(rng, size_t(n) * rows, -2.f, 2.f);
    auto w = random_vector(rng, n, 0.5f, 1.5f);
    auto g = random_vector(rng, size_t(g_stride) * tokens + g_off, -4.f, 4.f);
    const float eps = 1e-6f;
    BufferSlice dx = to_device(arena, x), dw = to_device(arena, w), dg = to_device(arena, g);
    const uint64_t q8_bytes = vk::q8_activation_bytes(n * group, tokens);
    BufferSlice dq = arena.allocate(q8_bytes), dq_want = arena.allocate(q8_bytes);
    run([&](vk::CommandRecorder& rec) {
      rec.fill(dq, 0xDEADBEEFu);
      rec.barrier();
      ops::rms_norm(rec, pc,
                    {.x = dx,
                     .residual = {},
                     .weight = dw,
                     .y = dx,
                     .n = n,
                     .n_rows = rows,
                     .eps = eps,
                     .q8 = q8 ? dq : BufferSlice{},
                     .gate = dg,
                     .gate_off = g_off,
                     .gate_stride = g_stride,
                     .gate_group = group});
    });
    std::vector<float> want(x.size());
    for (uint32_t r = 0; r < rows; ++r) {
      double ss = 0;
      for (uint32_t i = 0; i < n; ++i) ss += double(x[r * n + i]) * x[r * n + i];
      const double inv = 1.0 / std::sqrt(ss / n + eps);
      for (uint32_t i = 0; i < n; ++i) {
        const double gv = g[g_off + (r / group) * g_stride + (r % group) * n + i];
        want[r * n + i] = float(x[r * n + i] * inv * w[i] * gv / (1.0 + std::exp(-gv)));
      }
    }
    const std::vector<float> y = from_device<float>(dx, want.size());
    EXPECT_TRUE(near_all(y, want, 1e-5, 1e-4)) << "q8 " << q8;
    if (q8) {
      vk::MatmulKernels kernels(pc);
      run([&](vk::CommandRecorder& rec) {
        kernels.record_quantize_q8(rec, dx, n * group, tokens, 0, dq_want);
      });
      EXPECT_EQ(from_device<uint8_t>(dq, q8_bytes), from_device<uint8_t>(dq_want, q8_bytes));
    }
  }
}

// A post-norm's residual in the norm's pass: y = r + rms_norm(x) * w, in place over r (the
// residual stream) with and without the q8 copy of the sum, and into a third buffer.
TEST(SmallKernels, RmsNormWithPostAdd) {
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  if (!ops::rms_norm_fuses_gate(256, 0, 0, vk_context().device().caps()))
    GTEST_SKIP() << "no subgroup arithmetic";
  for (int mode = 0; mode < 3; ++mode) {  // 0: y is r; 1: y is r, with q8; 2: y apart
    vk::Arena arena = make_arena();
    const uint32_t n = 256, rows = 1 + rng.below(5);
    auto x = random_vector(rng, size_t(n) * rows, -2.f, 2.f);
    auto r = random_vector(rng, size_t(n) * rows, -3.f, 3.f);
    auto w = random_vector(rng, n, 0.5f, 1.5f);
    const float eps = 1e-6f;
    BufferSlice dx = to_device(arena, x), dw = to_device(arena, w), dr = to_device(arena, r);
    BufferSlice dy = mode == 2 ? device_filled<float>(arena, x.size()) : dr;
    const uint64_t q8_bytes = vk::q8_activation_bytes(n, rows);
    BufferSlice dq = arena.allocate(q8_bytes), dq_want = arena.allocate(q8_bytes);
    run([&](vk::CommandRecorder& rec) {
      ops::rms_norm(rec, pc,
                    {.x = dx,
                     .residual = {},
                     .weight = dw,
                     .y = dy,
                     .n = n,
                     .n_rows = rows,
                     .eps = eps,
                     .q8 = mode == 1 ? dq : BufferSlice{},
                     .post_add = dr});
    });
    std::vector<float> want(x.size());
    for (uint32_t row = 0; row < rows; ++row) {
      double ss = 0;
      for (uint32_t i = 0; i < n; ++i) ss += double(x[row * n + i]) * x[row * n + i];
      const double inv = 1.0 / std::sqrt(ss / n + eps);
      for (uint32_t i = 0; i < n; ++i)
        want[row * n + i] = float(r[row * n + i] + x[row * n + i] * inv * w[i]);
    }
    EXPECT_TRUE(near_all(from_device<float>(dy, want.size()), want, 1e-5, 1e-4)) << mode;
    EXPECT_TRUE(near_all(from_device<float>(dx, x.size()), x, 0, 0)) << "x untouched";
    if (mode == 1) {
      vk::MatmulKernels kernels(pc);
      run([&](vk::CommandRecorder& rec) {
        kernels.record_quantize_q8(rec, dy, n, rows, 0, dq_want);
      });
      EXPECT_EQ(from_device<uint8_t>(dq, q8_bytes), from_device<uint8_t>(dq_want, q8_bytes));
    }
  }
}

// The post-norm's residual and the next norm in one pass: r' = (r + rms_norm(x) * w) * s (s a
// single value, optional), z = rms_norm(r') * w2, with no copy, the q8 copy or the f16 copy of z,
// at a width that leaves invocations without a block (1536 = 48 blocks on 64 invocations).
TEST(SmallKernels, RmsNormChainedIntoTheNextNorm) {
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  const auto& caps = vk_context().device().caps();
  if (!ops::rms_norm_fuses_gate(256, 0, 0, caps)) GTEST_SKIP() << "no subgroup arithmetic";
  for (int mode = 0; mode < 4; ++mode) {  // 0: plain; 1: scaled; 2: q8 copy; 3: f16 copy
    vk::Arena arena = make_arena();
    const uint32_t n = mode == 0 ? 1536 : 256 * (1 + rng.below(3)), rows = 1 + rng.below(5);
    auto x = random_vector(rng, size_t(n) * rows, -2.f, 2.f);
    auto r = random_vector(rng, size_t(n) * rows, -3.f, 3.f);
    auto w = random_vector(rng, n, 0.5f, 1.5f), w2 = random_vector(rng, n, 0.5f, 1.5f);
    const std::vector<float> scale = {rng.uniform(0.2f, 2.f)};
    const float eps = 1e-6f;
    BufferSlice dx = to_device(arena, x), dr = to_device(arena, r), dw = to_device(arena, w);
    BufferSlice dw2 = to_device(arena, w2), ds = to_device(arena, scale);
    BufferSlice dz = device_filled<float>(arena, x.size());
    const uint64_t q8_bytes = vk::q8_activation_bytes(n, rows);
    BufferSlice dq = arena.allocate(q8_bytes), dq_want = arena.allocate(q8_bytes);
    BufferSlice dh = arena.allocate(uint64_t{n} * rows * 2);
    if (mode == 3 && !ops::rms_norm_writes_f16(n, caps)) continue;
    run([&](vk::CommandRecorder& rec) {
      ops::RmsNormArgs a;
      a.x = dx;
      a.weight = dw;
      a.y = dr;
      a.n = n;
      a.n_rows = rows;
      a.eps = eps;
      a.post_add = dr;
      a.next_weight = dw2;
      a.next_y = dz;
      if (mode == 1) a.scale = ds;
      if (mode == 2) a.q8 = dq;
      if (mode == 3) a.f16 = dh;
      ops::rms_norm(rec, pc, a);
    });
    std::vector<float> want_r(x.size()), want_z(x.size());
    for (uint32_t row = 0; row < rows; ++row) {
      const size_t o = size_t(row) * n;
      double ss = 0, ss2 = 0;
      for (uint32_t i = 0; i < n; ++i) ss += double(x[o + i]) * x[o + i];
      const double inv = 1.0 / std::sqrt(ss / n + eps);
      std::vector<double> res(n);
      for (uint32_t i = 0; i < n; ++i) {
        res[i] = (r[o + i] + x[o + i] * inv * w[i]) * (mode == 1 ? scale[0] : 1.0);
        ss2 += res[i] * res[i];
        want_r[o + i] = float(res[i]);
      }
      const double inv2 = 1.0 / std::sqrt(ss2 / n + eps);
      for (uint32_t i = 0; i < n; ++i) want_z[o + i] = float(res[i] * inv2 * w2[i]);
    }
    EXPECT_TRUE(near_all(from_device<float>(dr, want_r.size()), want_r, 1e-5, 1e-4)) << mode;
    EXPECT_TRUE(near_all(from_device<float>(dz, want_z.size()), want_z, 1e-5, 1e-4)) << mode;
    EXPECT_TRUE(near_all(from_device<float>(dx, x.size()), x, 0, 0)) << "x untouched";
    if (mode == 2) {
      vk::MatmulKernels kernels(pc);
      run([&](vk::CommandRecorder& rec) {
        kernels.record_quantize_q8(rec, dz, n, rows, 0, dq_want);
      });
      EXPECT_EQ(from_device<uint8_t>(dq, q8_bytes), from_device<uint8_t>(dq_want, q8_bytes));
    }
    if (mode == 3) {
      EXPECT_TRUE(f16_copy_matches(dh, from_device<float>(dz, x.size())));
    }
  }
}

TEST(SmallKernels, ElementwiseAddMulScaleSoftcap) {
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  for (uint32_t n : {1u, 1023u, 4097u, 100000u + rng.below(1000)}) {
    vk::Arena arena = make_arena();
    auto a = random_vector(rng, n, -60.f, 60.f), b = random_vector(rng, n, -3.f, 3.f);
    BufferSlice da = to_device(arena, a), db = to_device(arena, b);
    BufferSlice o[4];
    for (auto& s : o) s = device_filled<float>(arena, n);
    const float s = rng.uniform(0.1f, 3.f), cap = 30.f;
    run([&](vk::CommandRecorder& rec) {
      ops::add(rec, pc, da, db, o[0], n);
      ops::mul(rec, pc, da, db, o[1], n);
      ops::scale(rec, pc, da, o[2], n, s);
      ops::softcap(rec, pc, da, o[3], n, cap);
    });
    std::vector<float> want[4];
    for (auto& w : want) w.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
      want[0][i] = a[i] + b[i];
      want[1][i] = a[i] * b[i];
      want[2][i] = a[i] * s;
      want[3][i] = float(cap * std::tanh(double(a[i]) / cap));
    }
    SCOPED_TRACE("n=" + std::to_string(n));
    EXPECT_TRUE(near_all(from_device<float>(o[0], n), want[0], 0, 1e-7));
    EXPECT_TRUE(near_all(from_device<float>(o[1], n), want[1], 0, 1e-7));
    EXPECT_TRUE(near_all(from_device<float>(o[2], n), want[2], 0, 1e-7));
    EXPECT_TRUE(near_all(from_device<float>(o[3], n), want[3], 1e-5, 1e-5));
  }
}

TEST(SmallKernels, GluSiluAndGeluOnAFusedGateUpBuffer) {
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  for (uint32_t n : {1u, 255u, 1000u + rng.below(100)}) {
    for (auto act : {ops::GluActivation::Silu, ops::GluActivation::GeluTanh}) {
      vk::Arena arena = make_arena();
      const uint32_t rows = 1 + rng.below(5);
      // One fused row per token: [gate (n) | up (n)], as a fused gate|up projection writes it.
      auto fused = random_vector(rng, size_t(2) * n * rows, -6.f, 6.f);
      BufferSlice df = to_device(arena, fused);
      BufferSlice out = device_filled<float>(arena, size_t(n) * rows);
      // up starts n elements into each fused row; bind it as a sub-slice when aligned, else via a
      // separate copy (slices must be 16-byte aligned).
      std::vector<float> up_only(size_t(n) * rows);
      for (uint32_t r = 0; r < rows; ++r)
        std::copy_n(fused.begin() + size_t(r) * 2 * n + n, n, up_only.begin() + size_t(r) * n);
      BufferSlice dup =
          (n * 4) % 16 == 0 ? df.sub(n * 4, df.size - n * 4) : to_device(arena, up_only);
      const uint32_t up_stride = (n * 4) % 16 == 0 ? 2 * n : n;
      run([&](vk::CommandRecorder& rec) {
        ops::glu(rec, pc,
                 {.gate = df,
                  .up = dup,
                  .out = out,
                  .n = n,
                  .n_rows = rows,
                  .act = act,
                  .gate_stride = 2 * n,
                  .up_stride = up_stride,
                  .out_stride = 0});
      });
      std::vector<float> want(size_t(n) * rows);
      for (uint32_t r = 0; r < rows; ++r)
        for (uint32_t i = 0; i < n; ++i) {
          const double g = fused[size_t(r) * 2 * n + i], u = fused[size_t(r) * 2 * n + n + i];
          const double a =
              act == ops::GluActivation::Silu
                  ? g / (1 + std::exp(-g))
                  : 0.5 * g * (1 + std::tanh(0.7978845608028654 * g * (1 + 0.044715 * g * g)));
          want[size_t(r) * n + i] = float(a * u);
        }
      SCOPED_TRACE("n=" + std::to_string(n) + " act=" + std::to_string(int(act)));
      EXPECT_TRUE(near_all(from_device<float>(out, want.size()), want, 1e-5, 1e-5));
    }
  }
}

TEST(SmallKernels, ArgmaxPicksTheFirstLargestLogit) {
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  for (uint32_t n : {1u, 255u, 4096u, 4097u, 32000u + rng.below(1000)}) {
    vk::Arena arena = make_arena();
    const uint32_t rows = 1 + rng.below(4);
    auto logits = random_vector(rng, size_t(n) * rows, -20.f, 20.f);
    for (uint32_t r = 0; r < rows; ++r) {
      // A tie for the maximum at two random places: the lower index must win.
      const float top = 25.f + r;
      uint32_t i = rng.below(n), j = rng.below(n);
      logits[size_t(r) * n + i] = top;
      logits[size_t(r) * n + j] = top;
    }
    BufferSlice dl = to_device(arena, logits);
    BufferSlice out = device_filled<uint32_t>(arena, rows);
    const uint64_t scratch_bytes = ops::argmax_scratch_bytes(n, rows);
    BufferSlice scratch = scratch_bytes ? arena.allocate(scratch_bytes) : BufferSlice{};
    BufferSlice out1 = device_filled<uint32_t>(arena, rows);
    run([&](vk::CommandRecorder& rec) {
      ops::argmax(rec, pc, dl, out, n, rows, 0, scratch);
      ops::argmax(rec, pc, dl, out1, n, rows);  // single-pass path
    });
    EXPECT_EQ(from_device<uint32_t>(out1, rows), from_device<uint32_t>(out, rows));
    auto got = from_device<uint32_t>(out, rows);
    for (uint32_t r = 0; r < rows; ++r) {
      auto row = logits.begin() + size_t(r) * n;
      EXPECT_EQ(got[r], uint32_t(std::max_element(row, row + n) - row))
          << "n=" << n << " row=" << r;
    }
  }
}

// Scalar RoPE reference on one head row (double precision).
void rope_ref(std::span<float> x, uint32_t n_dims, bool neox, float base, float fscale,
              const std::vector<float>* factors, uint32_t pos) {
  std::vector<float> in(x.begin(), x.end());
  for (uint32_t i = 0; i < n_dims / 2; ++i) {
    double theta = double(pos) * fscale * std::pow(double(base), -2.0 * i / n_dims);
    if (factors) theta /= (*factors)[i];
    const uint32_t a = neox ? i : 2 * i, b = neox ? i + n_dims / 2 : 2 * i + 1;
    x[a] = float(in[a] * std::cos(theta) - in[b] * std::sin(theta));
    x[b] = float(in[a] * std::sin(theta) + in[b] * std::cos(theta));
  }
}

TEST(SmallKernels, RopeNormalAndNeoxWithFactorsAndPartialRotation) {
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  struct Case {
    uint32_t head_dim, n_dims, n_heads;
    bool neox, factors;
  };
  for (Case c : {Case{64, 64, 3, false, false}, Case{128, 128, 2, true, true},
                 Case{80, 32, 5, true, false}, Case{128, 96, 4, false, true}}) {
    vk::Arena arena = make_arena();
    // Two sequences: one prefilling 7 tokens from position 0, one decoding at a later position.
    std::vector<uint32_t> t0 = {0}, t1(64);
    std::iota(t1.begin(), t1.end(), 1);
    std::vector<kv::BatchSequence> seqs = {{t0, 7, 7}, {t1, 1, 900 + rng.below(100)}};
    kv::BatchMeta meta = kv::build_batch_meta(seqs);
    const uint32_t T = meta.n_tokens, stride = c.n_heads * c.head_dim + 8;  // padded rows
    auto x = random_vector(rng, size_t(T) * stride);
    std::vector<float> factors(c.n_dims / 2);
    for (float& f : factors) f = rng.uniform(1.f, 8.f);
    const float base = c.neox ? 1000000.f : 10000.f, fscale = c.factors ? 1.f : 0.5f;
    BufferSlice dx = to_device(arena, x), dmeta = to_device(arena, meta.words);
    BufferSlice dfac = to_device(arena, factors);
    BufferSlice out = device_filled<float>(arena, size_t(T) * c.n_heads * c.head_dim);
    ops::RopeParams rp{.head_dim = c.head_dim,
                       .n_dims = c.n_dims,
                       .neox = c.neox,
                       .freq_base = base,
                       .freq_scale = fscale,
                       .freq_factors = c.factors ? dfac : BufferSlice{}};
    ops::BatchInfo batch{dmeta, T, meta.n_seqs};
    run([&](vk::CommandRecorder& rec) {
      ops::rope(rec, pc, rp, batch, {dx, 0, stride}, {out, 0, 0}, c.n_heads);
      ops::rope(rec, pc, rp, batch, {dx, 0, stride}, {dx, 0, stride}, c.n_heads);  // in place
    });
    std::vector<float> want(size_t(T) * c.n_heads * c.head_dim), want_inplace = x;
    for (uint32_t t = 0; t < T; ++t)
      for (uint32_t h = 0; h < c.n_heads; ++h) {
        std::span<float> row(want.data() + (size_t(t) * c.n_heads + h) * c.head_dim, c.head_dim);
        std::copy_n(x.begin() + size_t(t) * stride + h * c.head_dim, c.head_dim, row.begin());
        rope_ref(row, c.n_dims, c.neox, base, fscale, c.factors ? &factors : nullptr,
                 meta.words[T + t]);
        std::copy(row.begin(), row.end(),
                  want_inplace.begin() + size_t(t) * stride + h * c.head_dim);
      }
    SCOPED_TRACE("head_dim=" + std::to_string(c.head_dim) + " n_dims=" + std::to_string(c.n_dims) +
                 " neox=" + std::to_string(c.neox));
    // float theta at positions near 1000 carries ~1e-4 rad of error.
    EXPECT_TRUE(near_all(from_device<float>(out, want.size()), want, 2e-3, 0));
    EXPECT_TRUE(near_all(from_device<float>(dx, x.size()), want_inplace, 2e-3, 0));
  }
}

// M-RoPE (Qwen2-VL's sections, Qwen3-VL's interleaved layout) on the CPU and Vulkan against a
// scalar reference of llama.cpp's pair choice: each token with its own (t, h, w), Qwen3-VL's
// 24/20/20/0 of 64 pairs (two pairs past the interleaved sections: turned by t, see RopeSpec).
TEST(SmallKernels, MropeSectionedAndInterleavedOnCpuAndVulkan) {
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  const uint32_t head_dim = 128, n_heads = 2, pairs = head_dim / 2;
  const std::array<uint32_t, 4> sec = {24, 20, 20, 0};
  std::vector<uint32_t> table = {0, 1};
  const std::vector<kv::BatchSequence> seqs = {{table, 9, 9}};
  const kv::BatchMeta meta = kv::build_batch_meta(seqs);
  const uint32_t T = meta.n_tokens;
  std::vector<uint32_t> pos(3 * T);
  for (uint32_t& p : pos) p = rng.below(300);
  const auto x = random_vector(rng, size_t(T) * n_heads * head_dim);
  for (const bool interleaved : {false, true}) {
    SCOPED_TRACE(interleaved ? "interleaved" : "sectioned");
    std::vector<float> want = x;
    for (uint32_t t = 0; t < T; ++t)
      for (uint32_t h = 0; h < n_heads; ++h) {
        float* row = want.data() + (size_t(t) * n_heads + h) * head_dim;
        for (uint32_t i = 0; i < pairs; ++i) {
          const uint32_t c = interleaved                    ? (i % 3 == 1 && i < 3 * sec[1]   ? 1
                                                               : i % 3 == 2 && i < 3 * sec[2] ? 2
                                                                                              : 0)
                             : i < sec[0]                   ? 0
                             : i < sec[0] + sec[1]          ? 1
                             : i < sec[0] + sec[1] + sec[2] ? 2
                                                            : 0;
          const double theta = pos[3 * t + c] * std::pow(5000000.0, -2.0 * i / head_dim);
          const float a = row[i], b = row[i + pairs];
          row[i] = float(a * std::cos(theta) - b * std::sin(theta));
          row[i + pairs] = float(a * std::sin(theta) + b * std::cos(theta));
        }
      }
    cpu::RopeParams cp;
    cp.head_dim = head_dim;
    cp.neox = true;
    cp.freq_base = 5000000.f;
    cp.mrope_sections = sec;
    cp.mrope_pos = pos.data();
    cp.mrope_interleaved = interleaved;
    std::vector<float> got_cpu(x.size());
    cpu::rope(cp, {meta.words, T, meta.n_seqs}, {x.data(), 0}, {got_cpu.data(), 0}, n_heads, 0, T);
    EXPECT_TRUE(near_all(got_cpu, want, 1e-3, 0));

    vk::Arena arena = make_arena();
    BufferSlice dx = to_device(arena, x), dmeta = to_device(arena, meta.words);
    BufferSlice dpos = to_device(arena, pos);
    BufferSlice out = device_filled<float>(arena, x.size());
    ops::RopeParams rp;
    rp.head_dim = head_dim;
    rp.neox = true;
    rp.freq_base = 5000000.f;
    rp.mrope_sections = sec;
    rp.mrope_pos = dpos;
    rp.mrope_interleaved = interleaved;
    run([&](vk::CommandRecorder& rec) {
      ops::rope(rec, pc, rp, {dmeta, T, meta.n_seqs}, {dx, 0, 0}, {out, 0, 0}, n_heads);
    });
    EXPECT_TRUE(near_all(from_device<float>(out, want.size()), want, 1e-3, 0));
  }
}

// Block sizes 16 and 32; with 32, each head row RMS-normed first (K by a weight, V plainly: the
// head norms rope.comp applies before rotating and writing), and Q's rows normed and rotated by
// rope() likewise, against a double-precision norm.
TEST(SmallKernels, KvWriteRotatesKAndCopiesVIntoShuffledBlocks) {
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  for (uint32_t block_size : {16u, 32u}) {
    const bool normed = block_size == 32;
    vk::Arena arena = make_arena();
    const uint32_t head_dim = 64, n_kv = 2, num_blocks = 12;
    std::vector<uint32_t> ids(num_blocks);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng.gen());
    std::vector<uint32_t> tab0(ids.begin(), ids.begin() + 4),
        tab1(ids.begin() + 4, ids.begin() + 8);
    // Sequence 0 prefills 17 tokens at 0..16, sequence 1 decodes one token at a later position.
    const uint32_t kv1 = 2 * block_size + 1 + rng.below(block_size);
    std::vector<kv::BatchSequence> seqs = {{tab0, 17, 17}, {tab1, 1, kv1}};
    kv::BatchMeta meta = kv::build_batch_meta(seqs, block_size);
    const uint32_t T = meta.n_tokens;
    kv::KvLayout layout{num_blocks, n_kv, block_size, head_dim};
    auto k = random_vector(rng, size_t(T) * n_kv * head_dim), v = random_vector(rng, k.size());
    auto q = random_vector(rng, size_t(T) * 3 * head_dim, -2.f, 2.f);
    const auto wk = random_vector(rng, head_dim, 0.5f, 1.5f), wq = random_vector(rng, head_dim);
    BufferSlice dk = to_device(arena, k), dv = to_device(arena, v),
                dmeta = to_device(arena, meta.words);
    BufferSlice dq = to_device(arena, q), dwk = to_device(arena, wk), dwq = to_device(arena, wq);
    BufferSlice dqr = device_filled<float>(arena, q.size());
    const float eps = 1e-6f;
    const ops::HeadNorm k_norm{dwk, eps}, v_norm{{}, eps}, q_norm{dwq, eps};
    // A head row normed on the host (double sums), by w where given.
    const auto norm_ref = [&](std::vector<float>& row, const std::vector<float>* w) {
      double ss = 0;
      for (float x : row) ss += double(x) * x;
      const double inv = 1.0 / std::sqrt(ss / row.size() + eps);
      for (size_t d = 0; d < row.size(); ++d) row[d] = float(row[d] * inv * (w ? (*w)[d] : 1.0));
    };
    BufferSlice kc = device_filled<uint16_t>(arena, layout.region_elements(), 0);
    BufferSlice vc = device_filled<uint16_t>(arena, layout.region_elements(), 0);
    ops::RopeParams rp{.head_dim = head_dim,
                       .n_dims = head_dim,
                       .neox = true,
                       .freq_base = 10000.f,
                       .freq_scale = 1.f,
                       .freq_factors = {}};
    ops::BatchInfo batch{dmeta, T, meta.n_seqs};
    run([&](vk::CommandRecorder& rec) {
      ops::write_kv(rec, pc, &rp, batch, {dk, 0, 0}, head_dim, {kc, n_kv, block_size},
                    normed ? &k_norm : nullptr);
      ops::write_kv(rec, pc, nullptr, batch, {dv, 0, 0}, head_dim, {vc, n_kv, block_size},
                    normed ? &v_norm : nullptr);
      if (normed) ops::rope(rec, pc, rp, batch, {dq, 0, 0}, {dqr, 0, 0}, 3, &q_norm);
    });
    if (normed) {
      const auto got_q = from_device<float>(dqr, q.size());
      for (uint32_t t = 0; t < T; ++t)
        for (uint32_t h = 0; h < 3; ++h) {
          const size_t at = (size_t(t) * 3 + h) * head_dim;
          std::vector<float> row(q.begin() + at, q.begin() + at + head_dim);
          norm_ref(row, &wq);
          rope_ref(row, head_dim, true, 10000.f, 1.f, nullptr, meta.words[T + t]);
          for (uint32_t d = 0; d < head_dim; ++d)
            ASSERT_NEAR(got_q[at + d], row[d], 1e-4 + 1e-4 * std::fabs(row[d])) << t << " " << h;
        }
    }
    auto kh = from_device<_Float16>(kc, layout.region_elements());
    auto vh = from_device<_Float16>(vc, layout.region_elements());
    std::vector<bool> written(layout.region_elements(), false);
    for (uint32_t t = 0; t < T; ++t) {
      const uint32_t s = meta.words[t], pos = meta.words[T + t];
      const auto& table = s == 0 ? tab0 : tab1;
      for (uint32_t h = 0; h < n_kv; ++h) {
        std::vector<float> row(k.begin() + (size_t(t) * n_kv + h) * head_dim,
                               k.begin() + (size_t(t) * n_kv + h + 1) * head_dim);
        std::vector<float> v_row(v.begin() + (size_t(t) * n_kv + h) * head_dim,
                                 v.begin() + (size_t(t) * n_kv + h + 1) * head_dim);
        if (normed) {
          norm_ref(row, &wk);
          norm_ref(v_row, nullptr);
        }
        rope_ref(row, head_dim, true, 10000.f, 1.f, nullptr, pos);
        for (uint32_t d = 0; d < head_dim; ++d) {
          const uint64_t e = layout.element(table[pos / block_size], h, pos % block_size, d);
          written[e] = true;
          ASSERT_NEAR(float(kh[e]), row[d], 2e-3) << "t=" << t << " h=" << h << " d=" << d;
          if (normed)  // the f32 norm may round to the neighbouring half
            ASSERT_NEAR(float(vh[e]), v_row[d], 2e-3) << "t=" << t << " h=" << h << " d=" << d;
          else
            ASSERT_EQ(float(vh[e]), round_f16(v_row[d])) << "t=" << t << " h=" << h << " d=" << d;
        }
      }
    }
    for (uint64_t e = 0; e < written.size(); ++e) {
      if (!written[e]) {
        ASSERT_EQ(float(kh[e]), 0.f) << "stray write at element " << e;
      }
    }
  }
}

}  // namespace
}  // namespace vkllm::test
