// The row kernels Gemma 3n's graph runs on Vulkan (engine/vulkan/row_ops.h: rows_binary,
// gaussian_topk, match_magnitude, stream_mix; RMSNorm without a weight through ops::rms_norm)
// and their CPU counterparts (engine/runtime/cpu_gemma3n.h) against scalar references in double,
// on fresh random inputs. Operands sit at odd element offsets with row strides wider than the
// rows (as AltUp's interleaved streams do), rows are not a multiple of the workgroup, and outputs
// are written in place where the graph does so. Tolerances: element-wise 1e-6 relative (float
// rounding of one or two operations); reductions 1e-5 relative plus 1e-5 absolute (float sums
// over up to 768 elements against double ones).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "engine/runtime/cpu_gemma3n.h"
#include "engine/vulkan/ops.h"
#include "engine/vulkan/row_ops.h"
#include "tests/engine/kernel_test_support.h"

namespace vkllm::test {
namespace {

namespace ops = vk::ops;
using runtime::cpu_gemma3n::RowsPtr;

// Rows of n at off + r * stride of a host vector (the layout both backends get).
struct HostRows {
  uint32_t off, stride;
  size_t at(uint32_t r, uint32_t i) const { return off + size_t(r) * stride + i; }
};

std::vector<float> gpu_result(vk::BufferSlice s, size_t n) {
  return from_device<float>(s, n);
}

TEST(RowOps, ElementwiseOnStridedRows) {
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  vk::Arena arena = make_arena();
  const uint32_t n = 300, rows = 5;  // n: one full workgroup and an edge
  const HostRows a{7, 3 * n + 1}, b{n + 3, 2 * n}, w{5, 0}, out{1, n + 2};
  const size_t size = 4 * n * rows + 64;
  const std::vector<float> va = random_vector(rng, size, -2.f, 2.f);
  const std::vector<float> vb = random_vector(rng, size, -2.f, 2.f);
  const float s = 0.70710678f;

  // Mul also reads its b rows through a stride of 0 (one weight row for every row).
  const std::pair<ops::RowsOp, bool> cases[] = {{ops::RowsOp::AddScaled, false},
                                                {ops::RowsOp::Mul, false},
                                                {ops::RowsOp::Mul, true},
                                                {ops::RowsOp::Scale, false}};
  for (const auto& [op, weight] : cases) {
    for (const bool in_place : {false, true}) {
      const HostRows& bl = weight ? w : b;
      const HostRows& ol = in_place ? a : out;
      std::vector<float> want = in_place ? va : std::vector<float>(size, 0.f);
      for (uint32_t r = 0; r < rows; ++r)
        for (uint32_t i = 0; i < n; ++i) {
          const double x = va[a.at(r, i)], y = vb[bl.at(r, i)];
          want[ol.at(r, i)] = static_cast<float>(op == ops::RowsOp::AddScaled ? (x + y) * s
                                                 : op == ops::RowsOp::Mul     ? x * y
                                                                              : x * s);
        }
      vk::BufferSlice da = to_device(arena, va), db = to_device(arena, vb);
      vk::BufferSlice dout = in_place ? da : to_device(arena, std::vector<float>(size, 0.f));
      run([&](vk::CommandRecorder& rec) {
        ops::rows_binary(rec, pc, op, {da, a.off, a.stride}, {db, bl.off, bl.stride},
                         {dout, ol.off, ol.stride}, n, rows, s);
      });
      EXPECT_TRUE(near_all(gpu_result(dout, size), want, 0, 1e-6))
          << "op " << uint32_t(op) << (weight ? " by a weight" : "")
          << (in_place ? " in place" : "");

      // The CPU backend's kernels on the same layout.
      std::vector<float> ca = va, cb = vb, cout(size, 0.f);
      float* co = in_place ? ca.data() : cout.data();
      const RowsPtr pa{ca.data() + a.off, a.stride}, po{co + ol.off, ol.stride};
      namespace cg = runtime::cpu_gemma3n;
      if (op == ops::RowsOp::AddScaled)
        cg::add_rows(pa, {cb.data() + b.off, b.stride}, po, n, s, 0, rows);
      else if (op == ops::RowsOp::Mul && weight)
        cg::mul_weight(pa, cb.data() + w.off, po, n, 0, rows);
      else if (op == ops::RowsOp::Mul)
        cg::mul_rows(pa, {cb.data() + b.off, b.stride}, po, n, 0, rows);
      else if (in_place)
        cg::scale_rows(pa, n, s, 0, rows);
      else
        continue;  // the CPU's scale works in place only
      EXPECT_TRUE(near_all(in_place ? ca : cout, want, 0, 1e-6))
          << "CPU op " << uint32_t(op) << (weight ? " by a weight" : "")
          << (in_place ? " in place" : "");
    }
  }
}

// Gaussian top-k: max(x - (mean + k * std), 0), std over n - 1; match magnitude: x * |ref| / |x|.
void reference_topk(std::vector<float>& x, HostRows l, uint32_t n, uint32_t rows, float k) {
  for (uint32_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (uint32_t i = 0; i < n; ++i) mean += x[l.at(r, i)];
    mean /= n;
    for (uint32_t i = 0; i < n; ++i) var += (x[l.at(r, i)] - mean) * (x[l.at(r, i)] - mean);
    const double cutoff = mean + k * std::sqrt(var / (n - 1));
    for (uint32_t i = 0; i < n; ++i)
      x[l.at(r, i)] = static_cast<float>(std::max(x[l.at(r, i)] - cutoff, 0.0));
  }
}

TEST(RowOps, GaussianTopkAndMatchMagnitude) {
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  vk::Arena arena = make_arena();
  const float k = 1.6448536f;  // Gemma 3n's 95th percentile
  for (const uint32_t n : {768u, 37u}) {
    const uint32_t rows = 6;
    const HostRows xl{3, 2 * n + 5}, rl{n + 1, 2 * n + 5};
    const size_t size = size_t(2 * n + 5) * rows + n + 8;
    // An offset mean, so that a one-pass variance would cancel; one row all zeros (its
    // magnitude match gives zeros, its top-k keeps nothing).
    std::vector<float> x = random_vector(rng, size, 1.f, 4.f);
    const std::vector<float> ref = random_vector(rng, size, -3.f, 3.f);
    for (uint32_t i = 0; i < n; ++i) x[xl.at(2, i)] = 0.f;

    std::vector<float> want_topk = x;
    reference_topk(want_topk, xl, n, rows, k);
    vk::BufferSlice dx = to_device(arena, x);
    run([&](vk::CommandRecorder& rec) {
      ops::gaussian_topk(rec, pc, {dx, xl.off, xl.stride}, {dx, xl.off, xl.stride}, n, rows, k);
    });
    EXPECT_TRUE(near_all(gpu_result(dx, size), want_topk, 1e-5, 1e-5)) << "top-k, n " << n;
    size_t kept = 0;
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t i = 0; i < n; ++i) kept += want_topk[xl.at(r, i)] > 0 ? 1 : 0;
    // Uniform values keep about 2.7% past mean + 1.645 sd: at 768 a row always some, at 37
    // sometimes none in all five rows (about one run in 30 did).
    if (n >= 256) {
      EXPECT_GT(kept, 0u);
    }
    EXPECT_LT(kept, size_t(rows) * n / 4) << "about 5% of a Gaussian row stays";
    std::vector<float> cx = x;
    runtime::cpu_gemma3n::gaussian_topk({cx.data() + xl.off, xl.stride}, n, k, 0, rows);
    EXPECT_TRUE(near_all(cx, want_topk, 1e-5, 1e-5)) << "CPU top-k, n " << n;

    // Magnitude into another buffer at packed rows.
    std::vector<float> want_mag(size_t(n) * rows);
    for (uint32_t r = 0; r < rows; ++r) {
      double want = 0, have = 0;
      for (uint32_t i = 0; i < n; ++i) {
        want += double(ref[rl.at(r, i)]) * ref[rl.at(r, i)];
        have += double(x[xl.at(r, i)]) * x[xl.at(r, i)];
      }
      const double scale = have > 0 ? std::sqrt(want / have) : 0;
      for (uint32_t i = 0; i < n; ++i)
        want_mag[size_t(r) * n + i] = static_cast<float>(x[xl.at(r, i)] * scale);
    }
    vk::BufferSlice dx2 = to_device(arena, x), dref = to_device(arena, ref);
    vk::BufferSlice dmag = device_filled<float>(arena, want_mag.size());
    run([&](vk::CommandRecorder& rec) {
      ops::match_magnitude(rec, pc, {dref, rl.off, rl.stride}, {dx2, xl.off, xl.stride},
                           {dmag, 0, n}, n, rows);
    });
    EXPECT_TRUE(near_all(gpu_result(dmag, want_mag.size()), want_mag, 1e-5, 1e-5))
        << "magnitude, n " << n;
    std::vector<float> cx2 = x, cref = ref, cmag(want_mag.size());
    runtime::cpu_gemma3n::match_magnitude({cref.data() + rl.off, rl.stride},
                                          {cx2.data() + xl.off, xl.stride}, {cmag.data(), n}, n, 0,
                                          rows);
    EXPECT_TRUE(near_all(cmag, want_mag, 1e-5, 1e-5)) << "CPU magnitude, n " << n;
  }
}

TEST(RowOps, RmsNormWithoutWeight) {
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  vk::Arena arena = make_arena();
  // 64: the register-blocked kernel (per-head V norms); 100: the general one.
  for (const uint32_t n : {64u, 100u}) {
    const uint32_t rows = 9;
    const std::vector<float> x = random_vector(rng, size_t(n) * rows, -3.f, 3.f);
    std::vector<float> want(x.size());
    const float eps = 1e-6f;
    for (uint32_t r = 0; r < rows; ++r) {
      double ss = 0;
      for (uint32_t i = 0; i < n; ++i) ss += double(x[r * n + i]) * x[r * n + i];
      const double inv = 1.0 / std::sqrt(ss / n + eps);
      for (uint32_t i = 0; i < n; ++i) want[r * n + i] = static_cast<float>(x[r * n + i] * inv);
    }
    vk::BufferSlice dx = to_device(arena, x);
    ops::RmsNormArgs a;
    a.x = a.y = dx;  // in place, as the graph norms V
    a.n = n;
    a.n_rows = rows;
    a.eps = eps;
    run([&](vk::CommandRecorder& rec) { ops::rms_norm(rec, pc, a); });
    EXPECT_TRUE(near_all(gpu_result(dx, x.size()), want, 1e-6, 1e-5)) << "n " << n;
    std::vector<float> cx = x;
    runtime::cpu_gemma3n::rms_norm_plain({cx.data(), n}, {cx.data(), n}, n, eps, 0, rows);
    EXPECT_TRUE(near_all(cx, want, 1e-6, 1e-5)) << "CPU, n " << n;
  }
}

TEST(RowOps, StreamMixPredictCorrectMean) {
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  vk::Arena arena = make_arena();
  const uint32_t n = 200, k = 4, rows = 3, act = 0;
  // Streams packed per token (k * n); coefficients at an offset with a wider stride; the active
  // stream's new value (a layer's output) in rows of its own.
  const HostRows sl{0, k * n}, cl{5, k * k + 3}, al{2, n + 4};
  const std::vector<float> s = random_vector(rng, size_t(k) * n * rows, -2.f, 2.f);
  const std::vector<float> c = random_vector(rng, size_t(cl.stride) * rows + 8, -0.5f, 0.5f);
  const std::vector<float> active = random_vector(rng, size_t(al.stride) * rows + 8, -2.f, 2.f);
  vk::BufferSlice ds = to_device(arena, s), dc = to_device(arena, c),
                  dact = to_device(arena, active);
  auto stream = [&](const std::vector<float>& v, uint32_t r, uint32_t i, uint32_t d) {
    return double(v[sl.at(r, i * n + d)]);
  };

  std::vector<float> want_pred(s.size()), want_corr(s.size()), want_mean(size_t(n) * rows);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t d = 0; d < n; ++d) {
      double sum = 0;
      for (uint32_t i = 0; i < k; ++i) {
        double acc = stream(s, r, i, d);
        for (uint32_t j = 0; j < k; ++j) acc += c[cl.at(r, i * k + j)] * stream(s, r, j, d);
        want_pred[sl.at(r, i * n + d)] = static_cast<float>(acc);
        // Correct, with s as the predictions.
        const double innovation = active[al.at(r, d)] - stream(s, r, act, d);
        want_corr[sl.at(r, i * n + d)] =
            static_cast<float>(stream(s, r, i, d) + (c[cl.at(r, i)] + 1.0) * innovation);
        sum += stream(s, r, i, d);
      }
      want_mean[size_t(r) * n + d] = static_cast<float>(sum / k);
    }

  vk::BufferSlice dpred = device_filled<float>(arena, s.size());
  vk::BufferSlice dcorr = device_filled<float>(arena, s.size());
  vk::BufferSlice dmean = device_filled<float>(arena, want_mean.size());
  run([&](vk::CommandRecorder& rec) {
    ops::StreamMixArgs m;
    m.n = n;
    m.k = k;
    m.rows = rows;
    m.i_active = act;
    m.streams = {ds, sl.off, sl.stride};
    m.coefs = {dc, cl.off, cl.stride};
    m.out = {dpred, sl.off, sl.stride};
    ops::stream_mix(rec, pc, m);
    m.mode = ops::StreamMix::Correct;
    m.active = {dact, al.off, al.stride};
    m.out = {dcorr, sl.off, sl.stride};
    ops::stream_mix(rec, pc, m);
    m.mode = ops::StreamMix::Mean;
    m.out = {dmean, 0, n};
    ops::stream_mix(rec, pc, m);
  });
  EXPECT_TRUE(near_all(gpu_result(dpred, s.size()), want_pred, 1e-6, 1e-5)) << "predict";
  EXPECT_TRUE(near_all(gpu_result(dcorr, s.size()), want_corr, 1e-6, 1e-5)) << "correct";
  EXPECT_TRUE(near_all(gpu_result(dmean, want_mean.size()), want_mean, 1e-6, 1e-5)) << "mean";

  namespace cg = runtime::cpu_gemma3n;
  std::vector<float> cs = s, cc = c, ca = active, cpred(s.size()), ccorr(s.size()),
                     cmean(want_mean.size());
  cg::altup_predict({cs.data(), sl.stride}, {cc.data() + cl.off, cl.stride},
                    {cpred.data(), sl.stride}, n, k, 0, rows);
  cg::altup_correct({cs.data(), sl.stride}, {ca.data() + al.off, al.stride},
                    {cc.data() + cl.off, cl.stride}, {ccorr.data(), sl.stride}, n, k, act, 0, rows);
  cg::mean_streams({cs.data(), sl.stride}, {cmean.data(), n}, n, k, 0, rows);
  EXPECT_TRUE(near_all(cpred, want_pred, 1e-6, 1e-5)) << "CPU predict";
  EXPECT_TRUE(near_all(ccorr, want_corr, 1e-6, 1e-5)) << "CPU correct";
  EXPECT_TRUE(near_all(cmean, want_mean, 1e-6, 1e-5)) << "CPU mean";
}

}  // namespace
}  // namespace vkllm::test
