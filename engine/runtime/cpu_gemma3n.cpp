#include "engine/runtime/cpu_gemma3n.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace vkllm::runtime::cpu_gemma3n {

namespace {
// Sums in double: these rows feed norms and magnitudes whose float sums ggml also keeps exact
// enough; double costs nothing at these sizes.
double sum_squares(const float* x, uint32_t n) {
  double s = 0;
  for (uint32_t i = 0; i < n; ++i) s += double(x[i]) * x[i];
  return s;
}
}  // namespace

void rms_norm_plain(RowsPtr x, RowsPtr y, uint32_t n, float eps, uint32_t b, uint32_t e) {
  for (uint32_t r = b; r < e; ++r) {
    const float* xr = x.row(r);
    float* yr = y.row(r);
    const float inv = static_cast<float>(1.0 / std::sqrt(sum_squares(xr, n) / n + eps));
    for (uint32_t i = 0; i < n; ++i) yr[i] = xr[i] * inv;
  }
}

void add_rows(RowsPtr a, RowsPtr bb, RowsPtr out, uint32_t n, float scale, uint32_t b, uint32_t e) {
  for (uint32_t r = b; r < e; ++r) {
    const float *ar = a.row(r), *br = bb.row(r);
    float* o = out.row(r);
    for (uint32_t i = 0; i < n; ++i) o[i] = (ar[i] + br[i]) * scale;
  }
}

void mul_rows(RowsPtr a, RowsPtr bb, RowsPtr out, uint32_t n, uint32_t b, uint32_t e) {
  for (uint32_t r = b; r < e; ++r) {
    const float *ar = a.row(r), *br = bb.row(r);
    float* o = out.row(r);
    for (uint32_t i = 0; i < n; ++i) o[i] = ar[i] * br[i];
  }
}

void mul_weight(RowsPtr x, const float* w, RowsPtr out, uint32_t n, uint32_t b, uint32_t e) {
  for (uint32_t r = b; r < e; ++r) {
    const float* xr = x.row(r);
    float* o = out.row(r);
    for (uint32_t i = 0; i < n; ++i) o[i] = xr[i] * w[i];
  }
}

void scale_rows(RowsPtr x, uint32_t n, float s, uint32_t b, uint32_t e) {
  for (uint32_t r = b; r < e; ++r) {
    float* xr = x.row(r);
    for (uint32_t i = 0; i < n; ++i) xr[i] *= s;
  }
}

void gaussian_topk(RowsPtr x, uint32_t n, float std_mul, uint32_t b, uint32_t e) {
  for (uint32_t r = b; r < e; ++r) {
    float* xr = x.row(r);
    double mean = 0;
    for (uint32_t i = 0; i < n; ++i) mean += xr[i];
    mean /= n;
    double var = 0;
    for (uint32_t i = 0; i < n; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= std::max<uint32_t>(n - 1, 1);
    const float cutoff = static_cast<float>(mean + std_mul * std::sqrt(var));
    for (uint32_t i = 0; i < n; ++i) xr[i] = std::max(xr[i] - cutoff, 0.0f);
  }
}

void match_magnitude(RowsPtr ref, RowsPtr x, RowsPtr out, uint32_t n, uint32_t b, uint32_t e) {
  for (uint32_t r = b; r < e; ++r) {
    const float* xr = x.row(r);
    float* o = out.row(r);
    const double target = std::sqrt(sum_squares(ref.row(r), n));
    const double have = std::sqrt(sum_squares(xr, n));
    const float k = have > 0 ? static_cast<float>(target / have) : 0.0f;
    for (uint32_t i = 0; i < n; ++i) o[i] = xr[i] * k;
  }
}

void altup_predict(RowsPtr s, RowsPtr coefs, RowsPtr out, uint32_t n, uint32_t k, uint32_t b,
                   uint32_t e) {
  for (uint32_t r = b; r < e; ++r) {
    const float* sr = s.row(r);
    const float* c = coefs.row(r);
    float* o = out.row(r);
    for (uint32_t i = 0; i < k; ++i) {
      float* oi = o + uint64_t(i) * n;
      const float* si = sr + uint64_t(i) * n;
      for (uint32_t d = 0; d < n; ++d) {
        float acc = 0;
        for (uint32_t j = 0; j < k; ++j) acc += c[i * k + j] * sr[uint64_t(j) * n + d];
        oi[d] = si[d] + acc;
      }
    }
  }
}

void altup_correct(RowsPtr pred, RowsPtr active, RowsPtr coefs, RowsPtr out, uint32_t n, uint32_t k,
                   uint32_t i_active, uint32_t b, uint32_t e) {
  std::vector<float> innovation(n);
  for (uint32_t r = b; r < e; ++r) {
    const float* p = pred.row(r);
    const float* a = active.row(r);
    const float* c = coefs.row(r);
    float* o = out.row(r);
    for (uint32_t d = 0; d < n; ++d) innovation[d] = a[d] - p[uint64_t(i_active) * n + d];
    for (uint32_t i = 0; i < k; ++i) {
      const float w = c[i] + 1.0f;
      for (uint32_t d = 0; d < n; ++d)
        o[uint64_t(i) * n + d] = p[uint64_t(i) * n + d] + w * innovation[d];
    }
  }
}

void mean_streams(RowsPtr s, RowsPtr out, uint32_t n, uint32_t k, uint32_t b, uint32_t e) {
  for (uint32_t r = b; r < e; ++r) {
    const float* sr = s.row(r);
    float* o = out.row(r);
    for (uint32_t d = 0; d < n; ++d) {
      float acc = 0;
      for (uint32_t i = 0; i < k; ++i) acc += sr[uint64_t(i) * n + d];
      o[d] = acc / float(k);
    }
  }
}

}  // namespace vkllm::runtime::cpu_gemma3n
