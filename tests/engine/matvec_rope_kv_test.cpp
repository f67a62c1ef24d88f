// record_matvec_rope_kv: decode's Q|K|V product with RoPE and the paged KV-cache write in its
// epilogue, on q8 activations (the int8-dot kernels) and on f32 ones (the float-activation
// kernels), against a double-precision reference (the CPU-dequantized weights times the
// activations the kernel sees, rotated as ggml's rope_ext) on fresh random inputs: Q rotated into
// y, K rotated and V copied into their f16 caches at each token's slot, and nothing else written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "engine/kv/kv_layout.h"
#include "tests/engine/q8_test_support.h"

namespace vkllm::matmul_test {
namespace {

// Runs record_matvec_rope_kv on q8 activations (the int8-dot kernels) or f32 ones and checks it.
void check_rope_kv(vk::MatmulKernels& kernels, TensorType type, std::mt19937& rng, bool q8) {
  vk::Device& dev = context().device();
  const uint32_t cols = block_elements(type) == 256 ? 256 : 288;
  struct Case {
    uint32_t head_dim, n_dims;
    bool factors;
  };
  for (const Case c : {Case{64, 64, false}, Case{128, 96, true}}) {
    SCOPED_TRACE("head_dim=" + std::to_string(c.head_dim) + " n_dims=" + std::to_string(c.n_dims));
    const uint32_t n_q_heads = 4, n_kv = 2, block_size = 16, num_blocks = 12;
    const uint32_t q_rows = n_q_heads * c.head_dim, kv_rows = n_kv * c.head_dim;
    const uint32_t rows = q_rows + 2 * kv_rows;
    // Sequence 0 prefills 3 tokens at 0..2, sequence 1 decodes one at a later position; their
    // blocks are shuffled across the cache.
    std::vector<uint32_t> ids(num_blocks);
    std::iota(ids.begin(), ids.end(), 0u);
    std::shuffle(ids.begin(), ids.end(), rng);
    const std::vector<uint32_t> tab0(ids.begin(), ids.begin() + 4),
        tab1(ids.begin() + 4, ids.begin() + 8);
    const uint32_t kv1 = 2 * block_size + 1 + rng() % block_size;
    const std::vector<kv::BatchSequence> seqs = {{tab0, 3, 3}, {tab1, 1, kv1}};
    const kv::BatchMeta meta = kv::build_batch_meta(seqs, block_size);
    const uint32_t T = meta.n_tokens;
    const kv::KvLayout layout{num_blocks, n_kv, block_size, c.head_dim};

    const std::vector<uint8_t> wq = random_weights(type, rows, cols, rng);
    const std::vector<float> w = dequantize_rows(type, wq, rows, cols);
    const std::vector<float> x = random_floats(size_t{T} * cols, rng);
    std::vector<float> factors(c.n_dims / 2);
    for (float& f : factors) f = 1.0f + 7.0f * (rng() % 1000) / 1000.0f;
    auto upload = [&](const auto& v, const char* name) {
      using T0 = typename std::decay_t<decltype(v)>::value_type;
      vk::Buffer b(dev, std::max<size_t>(v.size() * sizeof(T0), 16), vk::MemoryKind::DeviceLocal,
                   name);
      vk::upload(dev, b.slice(0, v.size() * sizeof(T0)), std::span<const T0>(v));
      return b;
    };
    const float sentinel = 12345.0f;  // K and V rows of y must stay untouched
    vk::Buffer xb, xq;
    std::vector<float> xd = x;  // the activations the products see
    if (q8)
      xd = quantize_on_gpu(kernels, x, cols, T, 0, xb, xq).dequantized();
    else
      xb = upload(x, "x");
    vk::Buffer mb = upload(meta.words, "meta");
    vk::Buffer fb = upload(factors, "factors");
    vk::RopeKvEpilogue e;
    e.rope = {.head_dim = c.head_dim,
              .n_dims = c.n_dims,
              .neox = false,
              .freq_base = c.factors ? 500000.0f : 10000.0f,
              .freq_scale = c.factors ? 1.0f : 0.5f,
              .freq_factors = c.factors ? fb.slice() : vk::BufferSlice{}};
    e.batch = {mb.slice(), T, meta.n_seqs};
    e.q_rows = q_rows;
    e.kv_rows = kv_rows;
    ASSERT_TRUE(kernels.can_fuse_rope_kv(type, e.rope));
    // Stacked: one product of all rows; split: Q, K and V as three tensors and products (a
    // model whose V has another type), each at its row_base.
    for (const bool split : {false, true}) {
      SCOPED_TRACE(split ? "Q, K and V apart" : "Q|K|V stacked");
      struct Part {
        uint32_t base, rows;
      };
      std::vector<Part> parts = {{0, rows}};
      if (split) parts = {{0, q_rows}, {q_rows, kv_rows}, {q_rows + kv_rows, kv_rows}};
      vk::Buffer kc = upload(std::vector<uint16_t>(layout.region_elements(), 0), "k cache");
      vk::Buffer vc = upload(std::vector<uint16_t>(layout.region_elements(), 0), "v cache");
      e.k_cache = {kc.slice(), n_kv, block_size};
      e.v_cache = {vc.slice(), n_kv, block_size};
      std::vector<vk::Buffer> wbs, ybs;
      vk::CommandRecorder rec(dev);
      rec.begin();
      for (const Part& part : parts) {
        const uint64_t row_bytes = vk::weight_tensor_bytes(type, 1, cols);
        std::vector<uint8_t> part_bytes(wq.begin() + part.base * row_bytes,
                                        wq.begin() + (part.base + part.rows) * row_bytes);
        part_bytes.resize(part_bytes.size() + vk::kWeightReadSlackBytes, 0xA5);
        wbs.push_back(device_weights(type, part_bytes));
        ybs.push_back(upload(std::vector<float>(size_t{T} * part.rows, sentinel), "y"));
        e.row_base = part.base;
        kernels.record_matvec_rope_kv(rec,
                                      {.type = type,
                                       .weights = wbs.back().slice(),
                                       .x = xb.slice(),
                                       .y = ybs.back().slice(),
                                       .rows = part.rows,
                                       .cols = cols,
                                       .batch = T,
                                       .xq = q8 ? xq.slice() : vk::BufferSlice{}},
                                      e);
      }
      rec.submit_and_wait();
      std::vector<std::vector<float>> ys;
      for (size_t i = 0; i < parts.size(); ++i)
        ys.push_back(vk::download<float>(dev, ybs[i].slice(), size_t{T} * parts[i].rows));
      // y of the product that made virtual row n, at that product's own row index.
      auto y_at = [&](uint32_t t, uint32_t n) {
        size_t i = parts.size() - 1;
        while (n < parts[i].base) --i;
        return ys[i][size_t{t} * parts[i].rows + (n - parts[i].base)];
      };
      const auto kh = vk::download<_Float16>(dev, kc.slice(), layout.region_elements());
      const auto vh = vk::download<_Float16>(dev, vc.slice(), layout.region_elements());

      const double tol = tolerance(type);
      std::vector<bool> written(layout.region_elements(), false);
      for (uint32_t t = 0; t < T; ++t) {
        const uint32_t seq = meta.words[t], pos = meta.words[T + t];
        // The product in double, and the scale of each output's rounding error.
        std::vector<double> val(rows), mag(rows);
        for (uint32_t n = 0; n < rows; ++n) {
          for (uint32_t k = 0; k < cols; ++k) {
            const double p = double(w[size_t{n} * cols + k]) * xd[size_t{t} * cols + k];
            val[n] += p;
            mag[n] += std::abs(p);
          }
        }
        for (uint32_t n = 0; n < q_rows + kv_rows; n += 2) {  // rotate Q and K pairs
          const uint32_t i = (n % c.head_dim) / 2;
          if (2 * i >= c.n_dims) continue;
          double theta = pos * double(e.rope.freq_scale) *
                         std::pow(double(e.rope.freq_base), -2.0 * i / c.n_dims);
          if (c.factors) theta /= factors[i];
          const double a = val[n], b = val[n + 1];
          val[n] = a * std::cos(theta) - b * std::sin(theta);
          val[n + 1] = a * std::sin(theta) + b * std::cos(theta);
          mag[n] = mag[n + 1] = mag[n] + mag[n + 1];
        }
        for (uint32_t n = 0; n < rows; ++n) {
          // f32 angles at these positions are off by < 1e-5 rad; the caches round to f16.
          const bool cached = n >= q_rows;
          const double bound = tol * mag[n] + (cached ? 1e-3 : 1e-5) * std::abs(val[n]) + 1e-6;
          SCOPED_TRACE("token " + std::to_string(t) + " row " + std::to_string(n));
          if (!cached) {
            ASSERT_NEAR(y_at(t, n), val[n], bound);
            continue;
          }
          ASSERT_EQ(y_at(t, n), sentinel) << "K/V rows are not written to y";
          const uint32_t local = n - q_rows, h = (local % kv_rows) / c.head_dim;
          const uint32_t d = local % c.head_dim;
          const auto& table = seq == 0 ? tab0 : tab1;
          const uint64_t at = layout.element(table[pos / block_size], h, pos % block_size, d);
          written[at] = true;
          const auto& cache = local < kv_rows ? kh : vh;
          ASSERT_NEAR(float(cache[at]), val[n], bound);
        }
      }
      for (uint64_t at = 0; at < written.size(); ++at) {
        if (!written[at]) {
          ASSERT_EQ(float(kh[at]), 0.0f) << "stray K write at element " << at;
          ASSERT_EQ(float(vh[at]), 0.0f) << "stray V write at element " << at;
        }
      }
    }
  }
}

class MatvecInt8RopeKv : public Int8KernelTest {};

TEST_P(MatvecInt8RopeKv, RotatesQAndKAndWritesTheCacheSlots) {
  check_rope_kv(kernels, GetParam(), rng, /*q8=*/true);
}

INSTANTIATE_TEST_SUITE_P(Int8Types, MatvecInt8RopeKv,
                         testing::Values(TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K),
                         type_param_name);

// The float-activation kernels' variant, what devices without the int8 dot (and float weights
// everywhere) run.
class MatvecRopeKv : public testing::TestWithParam<TensorType> {};

TEST_P(MatvecRopeKv, RotatesQAndKAndWritesTheCacheSlots) {
  if (!context().caps().subgroup_arithmetic()) GTEST_SKIP() << "no subgroup arithmetic";
  test::SeededRng seeded;  // prints its seed with any failure
  vk::MatmulKernels kernels(context().pipelines(), {.int8_dot = vk::Int8Dot::Off});
  check_rope_kv(kernels, GetParam(), seeded.gen(), /*q8=*/false);
}

INSTANTIATE_TEST_SUITE_P(FloatActivations, MatvecRopeKv,
                         testing::Values(TensorType::F32, TensorType::F16, TensorType::BF16,
                                         TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K),
                         type_param_name);

TEST(MatvecInt8RopeKvArgs, RejectsNeoxOrderAndMismatchedShapes) {
  if (!int8_dot_available()) GTEST_SKIP() << "no integer dot product / subgroup arithmetic";
  vk::MatmulKernels kernels(context().pipelines(), {.int8_dot = vk::Int8Dot::On});
  vk::ops::RopeParams rope;
  rope.head_dim = rope.n_dims = 64;
  EXPECT_TRUE(kernels.can_fuse_rope_kv(TensorType::F16, rope));  // the float-activation kernel
  rope.neox = true;
  EXPECT_FALSE(kernels.can_fuse_rope_kv(TensorType::Q4_K, rope));
  vk::Device& dev = context().device();
  vk::Buffer any(dev, 1 << 20, vk::MemoryKind::DeviceLocal, "any");
  vk::RopeKvEpilogue e;
  e.rope.head_dim = e.rope.n_dims = 64;
  e.batch = {any.slice(), 1, 1};
  e.k_cache = e.v_cache = {any.slice(), 2, 16};
  e.q_rows = 256;
  e.kv_rows = 128;
  const vk::MatmulArgs args{.type = TensorType::Q8_0,
                            .weights = any.slice(),
                            .x = any.slice(),
                            .y = any.slice(),
                            .rows = 512,
                            .cols = 256,
                            .batch = 1,
                            .xq = any.slice()};
  vk::CommandRecorder rec(dev);
  rec.begin();
  auto bad = e;
  bad.kv_rows = 96;  // not whole heads
  EXPECT_THROW(kernels.record_matvec_rope_kv(rec, args, bad), std::invalid_argument);
  bad = e;
  bad.rope.neox = true;
  EXPECT_THROW(kernels.record_matvec_rope_kv(rec, args, bad), std::invalid_argument);
  bad = e;
  bad.k_cache.n_kv_heads = 4;  // the cache holds other heads than the product makes
  EXPECT_THROW(kernels.record_matvec_rope_kv(rec, args, bad), std::invalid_argument);
  bad = e;
  bad.batch.n_tokens = 2;
  EXPECT_THROW(kernels.record_matvec_rope_kv(rec, args, bad), std::invalid_argument);
  auto accumulate = args;
  accumulate.accumulate = true;
  EXPECT_THROW(kernels.record_matvec_rope_kv(rec, accumulate, e), std::invalid_argument);
  EXPECT_NO_THROW(kernels.record_matvec_rope_kv(rec, args, e));
}

}  // namespace
}  // namespace vkllm::matmul_test
