#include "engine/cpu/mamba2_scan.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace vkllm::cpu {

namespace {

// ggml's softplus: linear above 20.
float scan_softplus(float x) {
  return x > 20.0f ? x : std::log1p(std::exp(x));
}

}  // namespace

void mamba2_scan_head(const Mamba2HeadArgs& a, uint32_t h, float* state, uint32_t n_tokens,
                      bool fresh) {
  if (a.n_group == 0 || a.n_head % a.n_group != 0)
    throw std::invalid_argument("mamba2_scan: heads not a multiple of the groups");
  const uint32_t hd = a.head_dim, ds = a.d_state;
  if (fresh) std::memset(state, 0, sizeof(float) * hd * ds);
  const uint32_t g = h / (a.n_head / a.n_group);
  const uint64_t d_inner = uint64_t(a.n_head) * hd;
  for (uint32_t t = 0; t < n_tokens; ++t) {
    const float* row = a.xbc.row(t);
    const float* x = row + uint64_t(h) * hd;
    const float* B = row + d_inner + uint64_t(g) * ds;
    const float* C = row + d_inner + uint64_t(a.n_group) * ds + uint64_t(g) * ds;
    const float dt = scan_softplus(a.dt.row(t)[h] + a.dt_bias);
    const float decay = std::exp(dt * a.a);
    float* o = a.out.row(t) + uint64_t(h) * hd;
    for (uint32_t i = 0; i < hd; ++i) {
      float* s = state + uint64_t(i) * ds;
      const float x_dt = x[i] * dt;
      float sum = 0.0f;
      for (uint32_t k = 0; k < ds; ++k) {
        s[k] = s[k] * decay + B[k] * x_dt;
        sum += s[k] * C[k];
      }
      o[i] = sum + x[i] * a.d;
    }
  }
}

}  // namespace vkllm::cpu
