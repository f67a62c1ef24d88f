// Built with -fno-trapping-math (engine/CMakeLists.txt): the float selects below only vectorize
// when the compiler may evaluate both sides, and nothing here reads floating-point exception flags.
#include "engine/sampling/row_kernels.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

namespace vkllm::sampling {

namespace {

constexpr size_t kBlock = 16;

// GCC/Clang vector types (SSE on x86-64, NEON on arm64): the block tests are four vector
// compares, where the compiler leaves the equivalent scalar loop unvectorized.
using F32x4 = float __attribute__((vector_size(16)));
using I32x4 = int32_t __attribute__((vector_size(16)));

F32x4 load(const float* x) {
  F32x4 v;
  std::memcpy(&v, x, sizeof v);
  return v;
}

bool any_set(I32x4 m) {
  return (m[0] | m[1] | m[2] | m[3]) != 0;
}

// Whether any of the block's values is above t.
bool any_above(const float* x, float t) {
  const F32x4 tv = {t, t, t, t};
  return any_set((load(x) > tv) | (load(x + 4) > tv) | (load(x + 8) > tv) | (load(x + 12) > tv));
}

// Whether any of the block's values is in [lo, hi).
bool any_in(const float* x, float lo, float hi) {
  const F32x4 l = {lo, lo, lo, lo}, h = {hi, hi, hi, hi};
  I32x4 m = {};
  for (size_t j = 0; j < kBlock; j += 4) m |= (load(x + j) >= l) & (load(x + j) < h);
  return any_set(m);
}

}  // namespace

// Cephes' expf: x = n ln2 + r with |r| <= ln2/2 (ln2 split in two for an exact product),
// a degree-6 polynomial for e^r, and 2^n put straight into the exponent bits.
float fast_exp(float x) {
  const uint32_t keep = x >= -87.0f ? 0xffffffffu : 0u;  // also drops -inf and NaN
  x = x >= -87.0f ? x : -87.0f;
  x = x <= 88.0f ? x : 88.0f;
  const float n = (x * 1.44269504089f + 12582912.0f) - 12582912.0f;  // round to nearest
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.0f;
  const float scale =
      std::bit_cast<float>(static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(y * scale) & keep);
}

int32_t row_argmax(std::span<const float> row) {
  size_t best = 0;
  float m = row[0];
  // Only a block holding something above the best so far is looked at one value at a time.
  auto look = [&](size_t from, size_t to) {
    for (size_t j = from; j < to; ++j) {
      if (row[j] > m) {
        m = row[j];
        best = j;
      }
    }
  };
  size_t i = 0;
  for (; i + kBlock <= row.size(); i += kBlock) {
    if (any_above(row.data() + i, m)) look(i, i + kBlock);
  }
  look(i, row.size());
  return static_cast<int32_t>(best);
}

float row_max(std::span<const float> row) {
  return row[row_argmax(row)];
}

// The hot loop of a whole-vocabulary softmax: AVX2 doubles its width where the CPU has it
// (without FMA, so every machine rounds alike).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
double
exp_row(std::span<const float> row, float divisor, float shift, std::span<float> out) {
  const size_t n = row.size();
  for (size_t i = 0; i < n; ++i) out[i] = fast_exp(row[i] / divisor - shift);
  // Eight running sums so the additions need not wait on each other.
  double acc[8] = {};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (size_t j = 0; j < 8; ++j) acc[j] += out[i + j];
  }
  double sum = 0;
  for (; i < n; ++i) sum += out[i];
  for (double a : acc) sum += a;
  return sum;
}

void select_top_k(std::span<const float> row, size_t k, std::vector<Candidate>& out) {
  out.clear();
  for (size_t i = 0; i < k; ++i) out.push_back({static_cast<int32_t>(i), row[i]});
  // A heap with the worst of the k best on top. Later tokens have larger ids, so one that only
  // equals the worst logit loses to it: strictly above is the test.
  std::make_heap(out.begin(), out.end(), better);
  float worst = out.front().logit;
  auto offer = [&](size_t i) {
    if (!(row[i] > worst)) return;
    std::pop_heap(out.begin(), out.end(), better);
    out.back() = {static_cast<int32_t>(i), row[i]};
    std::push_heap(out.begin(), out.end(), better);
    worst = out.front().logit;
  };
  size_t i = k;
  for (; i < row.size() && i % kBlock != 0; ++i) offer(i);
  for (; i + kBlock <= row.size(); i += kBlock) {
    if (!any_above(row.data() + i, worst)) continue;
    for (size_t j = i; j < i + kBlock; ++j) offer(j);
  }
  for (; i < row.size(); ++i) offer(i);
  std::sort(out.begin(), out.end(), better);
}

void append_band(std::span<const float> row, float lo, float hi, std::vector<Candidate>& out) {
  const size_t first = out.size();
  auto take = [&](size_t i) {
    if (row[i] >= lo && row[i] < hi) out.push_back({static_cast<int32_t>(i), row[i]});
  };
  size_t i = 0;
  for (; i + kBlock <= row.size(); i += kBlock) {
    if (!any_in(row.data() + i, lo, hi)) continue;
    for (size_t j = i; j < i + kBlock; ++j) take(j);
  }
  for (; i < row.size(); ++i) take(i);
  std::sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(), better);
}

}  // namespace vkllm::sampling
