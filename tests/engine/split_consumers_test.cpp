// What the kernels around a tensor-core GEMM do for it: the GLU summing a split-K gate|up
// product's partials unsummed (MatmulKernels::SplitParts), RoPE and the KV-cache writes summing a
// Q|K|V product's, the reduction pass normalizing the residual rows it sums, and the f16 rows the
// GLU and that pass write as the next GEMM's input (the RMSNorm's are checked in
// small_kernels_test). Against scalar references on fresh random inputs; sums must equal, bit for
// bit, the reduction pass's (partials added in order, then the residual).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/kv/kv_layout.h"
#include "engine/vulkan/matmul_ops.h"
#include "engine/vulkan/ops.h"
#include "tests/engine/kernel_test_support.h"

namespace vkllm::test {
namespace {

using vk::BufferSlice;
namespace ops = vk::ops;

// Partials laid out as a split-K GEMM leaves them: `splits` blocks of rows x ld floats.
struct Partials {
  uint32_t splits, rows, ld, stride;
  std::vector<float> data;
  Partials(SeededRng& rng, uint32_t splits_, uint32_t rows_, uint32_t width, float range)
      : splits(splits_), rows(rows_), ld(width + 4 * (1 + rng.below(4))), stride(rows * ld + 8) {
    data = random_vector(rng, size_t(splits) * stride, -range, range);
  }
  // The reduction pass's sum of element i of row r.
  float sum(uint32_t r, uint32_t i) const {
    float s = 0.f;
    for (uint32_t k = 0; k < splits; ++k) s += data[size_t(k) * stride + size_t(r) * ld + i];
    return s;
  }
};

TEST(SplitConsumers, GluSumsGateAndUpPartialsAndWritesF16Rows) {
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  for (uint32_t n : {2u, 256u, 1000u + 2u * rng.below(50)}) {
    for (uint32_t splits : {1u, 2u, 3u + rng.below(3)}) {
      for (bool f16 : {false, true}) {
        vk::Arena arena = make_arena();
        const uint32_t rows = 1 + rng.below(5);
        // Each partial row holds [gate (n) | up (n)], as a stacked gate|up product writes it.
        const Partials parts(rng, splits, rows, 2 * n, 3.f);
        BufferSlice dp = to_device(arena, parts.data);
        BufferSlice out = device_filled<float>(arena, size_t(n) * rows);
        BufferSlice dh = f16 ? device_filled<uint16_t>(arena, size_t(n) * rows) : BufferSlice{};
        run([&](vk::CommandRecorder& rec) {
          ops::glu(rec, pc,
                   {.gate = dp,
                    .up = dp,
                    .out = out,
                    .n = n,
                    .n_rows = rows,
                    .act = ops::GluActivation::Silu,
                    .gate_stride = parts.ld,
                    .up_stride = parts.ld,
                    .gate_off = 0,
                    .up_off = n,
                    .splits = splits,
                    .split_stride = parts.stride,
                    .f16 = dh});
        });
        std::vector<float> want(size_t(n) * rows);
        for (uint32_t r = 0; r < rows; ++r)
          for (uint32_t i = 0; i < n; ++i) {
            const double g = parts.sum(r, i), u = parts.sum(r, n + i);
            want[size_t(r) * n + i] = float(g / (1 + std::exp(-g)) * u);
          }
        SCOPED_TRACE("n=" + std::to_string(n) + " rows=" + std::to_string(rows) +
                     " splits=" + std::to_string(splits) + " f16=" + std::to_string(f16));
        const std::vector<float> got = from_device<float>(out, want.size());
        EXPECT_TRUE(near_all(got, want, 1e-5, 1e-5));
        if (f16) {
          EXPECT_TRUE(f16_copy_matches(dh, got));
        }
      }
    }
  }
}

TEST(SplitConsumers, ReductionPassNormalizesTheResidualRowsItSums) {
  if (!vk_context().device().caps().subgroup_arithmetic())
    GTEST_SKIP() << "the normalizing reduction needs subgroup arithmetic";
  SeededRng rng;
  vk::MatmulKernels kernels(vk_context().pipelines());
  // 4096 and 2 rows: the grid's x spans many workgroups, and one; 600 + 2k: a partial workgroup.
  for (uint32_t rows : {2u, 600u + 2u * rng.below(50), 4096u}) {
    for (uint32_t splits : {1u, 2u, 5u + rng.below(12)}) {
      for (bool f16 : {false, true}) {
        vk::Arena arena = make_arena();
        const uint32_t batch = 1 + rng.below(7), y_stride = rows + 4, norm_stride = rows + 2;
        const uint32_t y_off = 4;
        const Partials parts(rng, splits, batch, rows, 1.f);
        auto y = random_vector(rng, size_t(y_off) + size_t(batch) * y_stride, -2.f, 2.f);
        auto w = random_vector(rng, rows, 0.5f, 1.5f);
        const float eps = 1e-5f;
        BufferSlice dp = to_device(arena, parts.data), dy = to_device(arena, y),
                    dw = to_device(arena, w);
        BufferSlice dn = device_filled<float>(arena, size_t(batch) * norm_stride);
        BufferSlice dh = device_filled<uint16_t>(arena, size_t(batch) * rows);
        BufferSlice counters = to_device(arena, std::vector<uint32_t>(batch, 0u));
        vk::MatmulArgs product;  // what the deferred product wrote to: y += its sum
        product.y = dy;
        product.rows = rows;
        product.batch = batch;
        product.y_stride = y_stride;
        product.y_offset = y_off;
        product.accumulate = true;
        // Twice: the counters must be back at zero after the first.
        for (int round = 0; round < 2; ++round) {
          run([&](vk::CommandRecorder& rec) {
            kernels.record_reduce_norm(rec, product, {dp, splits, parts.ld, parts.stride},
                                       {.weight = dw,
                                        .y = dn,
                                        .y_stride = norm_stride,
                                        .f16 = f16 ? dh : BufferSlice{},
                                        .counters = counters,
                                        .eps = eps});
          });
        }
        std::vector<float> want_y = y;
        const std::vector<float> got_all = from_device<float>(dn, size_t(batch) * norm_stride);
        const std::vector<float> got_y = from_device<float>(dy, y.size());
        std::vector<float> norm_rows, want_rows;
        for (uint32_t t = 0; t < batch; ++t) {
          double ss = 0;
          for (uint32_t r = 0; r < rows; ++r) {
            float& v = want_y[y_off + size_t(t) * y_stride + r];
            for (int round = 0; round < 2; ++round) v = parts.sum(t, r) + v;
            ss += double(v) * v;
          }
          const double inv = 1.0 / std::sqrt(ss / rows + eps);
          for (uint32_t r = 0; r < rows; ++r) {
            want_rows.push_back(float(want_y[y_off + size_t(t) * y_stride + r] * inv * w[r]));
            norm_rows.push_back(got_all[size_t(t) * norm_stride + r]);
          }
        }
        SCOPED_TRACE("rows=" + std::to_string(rows) + " batch=" + std::to_string(batch) +
                     " splits=" + std::to_string(splits) + " f16=" + std::to_string(f16));
        EXPECT_TRUE(near_all(got_y, want_y, 0, 0));
        EXPECT_TRUE(near_all(norm_rows, want_rows, 1e-5, 1e-4));
        EXPECT_EQ(from_device<uint32_t>(counters, batch), std::vector<uint32_t>(batch, 0u));
        if (f16) {
          EXPECT_TRUE(f16_copy_matches(dh, norm_rows));
        }
      }
    }
  }
}

// RoPE of Q and the K / V cache writes reading a stacked Q|K|V product's partials give, bit for
// bit, what they give from the summed rows (rope_kv and kv_copy are checked against references in
// small_kernels_test).
TEST(SplitConsumers, RopeAndKvWritesSumQkvPartials) {
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  const uint32_t head_dim = 64, n_q = 4, n_kv = 2, block_size = 16, num_blocks = 12;
  const uint32_t q_rows = n_q * head_dim, kv_rows = n_kv * head_dim, width = q_rows + 2 * kv_rows;
  std::vector<uint32_t> ids(num_blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng.gen());
  std::vector<uint32_t> tab0(ids.begin(), ids.begin() + 4), tab1(ids.begin() + 4, ids.begin() + 8);
  std::vector<kv::BatchSequence> seqs = {{tab0, 13, 13}, {tab1, 1, 40 + rng.below(20)}};
  const kv::BatchMeta meta = kv::build_batch_meta(seqs, block_size);
  const uint32_t T = meta.n_tokens;
  const kv::KvLayout layout{num_blocks, n_kv, block_size, head_dim};
  for (uint32_t splits : {2u, 3u + rng.below(8)}) {
    vk::Arena arena = make_arena();
    const Partials parts(rng, splits, T, width, 1.f);
    std::vector<float> summed(size_t(T) * width);
    for (uint32_t t = 0; t < T; ++t)
      for (uint32_t r = 0; r < width; ++r) summed[size_t(t) * width + r] = parts.sum(t, r);
    BufferSlice dp = to_device(arena, parts.data), ds = to_device(arena, summed);
    BufferSlice dmeta = to_device(arena, meta.words);
    BufferSlice q_a = device_filled<float>(arena, size_t(T) * q_rows);
    BufferSlice q_b = device_filled<float>(arena, size_t(T) * q_rows);
    BufferSlice caches[4];
    for (auto& c : caches) c = device_filled<uint16_t>(arena, layout.region_elements(), 0);
    const ops::RopeParams rp{.head_dim = head_dim,
                             .n_dims = head_dim,
                             .neox = false,
                             .freq_base = 500000.f,
                             .freq_scale = 1.f,
                             .freq_factors = {}};
    const ops::BatchInfo batch{dmeta, T, meta.n_seqs};
    const auto from_parts = [&](uint32_t first) {
      return ops::HeadRows{dp, first, parts.ld, splits, parts.stride};
    };
    const auto from_sums = [&](uint32_t first) { return ops::HeadRows{ds, first, width}; };
    run([&](vk::CommandRecorder& rec) {
      ops::rope(rec, pc, rp, batch, from_parts(0), {q_a, 0, 0}, n_q);
      ops::rope(rec, pc, rp, batch, from_sums(0), {q_b, 0, 0}, n_q);
      ops::write_kv(rec, pc, &rp, batch, from_parts(q_rows), head_dim,
                    {caches[0], n_kv, block_size});
      ops::write_kv(rec, pc, &rp, batch, from_sums(q_rows), head_dim,
                    {caches[1], n_kv, block_size});
      ops::write_kv(rec, pc, nullptr, batch, from_parts(q_rows + kv_rows), head_dim,
                    {caches[2], n_kv, block_size});
      ops::write_kv(rec, pc, nullptr, batch, from_sums(q_rows + kv_rows), head_dim,
                    {caches[3], n_kv, block_size});
    });
    SCOPED_TRACE("splits=" + std::to_string(splits));
    EXPECT_EQ(from_device<float>(q_a, size_t(T) * q_rows),
              from_device<float>(q_b, size_t(T) * q_rows));
    for (int c = 0; c < 4; c += 2) {
      const auto got = from_device<uint16_t>(caches[c], layout.region_elements());
      EXPECT_EQ(got, from_device<uint16_t>(caches[c + 1], layout.region_elements()));
      EXPECT_GT(std::count_if(got.begin(), got.end(), [](uint16_t h) { return h != 0; }), 0);
    }
  }
}

}  // namespace
}  // namespace vkllm::test
