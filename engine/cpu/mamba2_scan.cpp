#include "engine/cpu/mamba2_scan.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace vkllm::cpu {

namespace {

// ggml's softplus: linear above 20.
float scan_softplus(float x) {
  return x > 20.0f ? x : std::log1p(std::exp(x));
}

struct HeadRows {
  const float* x;  // this head's head_dim inputs
  const float* B;  // its group's d_state
  const float* C;
};

HeadRows head_rows(const Mamba2HeadArgs& a, uint32_t h, uint32_t t) {
  const uint32_t g = h / (a.n_head / a.n_group);
  const uint64_t d_inner = uint64_t(a.n_head) * a.head_dim;
  const float* row = a.xbc.row(t);
  return {row + uint64_t(h) * a.head_dim, row + d_inner + uint64_t(g) * a.d_state,
          row + d_inner + uint64_t(a.n_group) * a.d_state + uint64_t(g) * a.d_state};
}

void scan_recurrent(const Mamba2HeadArgs& a, uint32_t h, float* state, uint32_t n_tokens) {
  const uint32_t hd = a.head_dim, ds = a.d_state;
  for (uint32_t t = 0; t < n_tokens; ++t) {
    const auto [x, B, C] = head_rows(a, h, t);
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

// The chunked form. With dt_t the softplus'd time step and cs_t = sum of dt_m * A over the
// chunk's tokens m <= t (the log of the decay from the chunk's start through token t), the
// recurrence s_t = exp(dt_t A) s_{t-1} + B_t dt_t x_t, y_t = C_t . s_t unrolls over a chunk to
//   y_t = exp(cs_t) C_t . S + sum_{j <= t} exp(cs_t - cs_j) dt_j (C_t . B_j) x_j
//   S' = exp(cs_end) S + sum_j exp(cs_end - cs_j) dt_j B_j x_j^T
// with S the state carried into the chunk. The state is held transposed (d_state rows of
// head_dim) and the chunk's B transposed too, so every inner loop runs along a contiguous row
// with no reduction in it (the compiler vectorises those; a float dot product it may not).
class ChunkedScan {
 public:
  ChunkedScan(const Mamba2HeadArgs& a, uint32_t h)
      : a_(a),
        h_(h),
        hd_(a.head_dim),
        ds_(a.d_state),
        st_(size_t(ds_) * hd_),
        bt_(size_t(ds_) * kQ),
        g_(size_t(kQ) * kQ),
        x_(size_t(kQ) * hd_),
        y_(size_t(4) * hd_) {}

  void run(float* state, uint32_t n_tokens, bool fresh) {
    for (uint32_t i = 0; i < hd_; ++i)
      for (uint32_t k = 0; k < ds_; ++k)
        st_[size_t(k) * hd_ + i] = fresh ? 0.0f : state[uint64_t(i) * ds_ + k];
    for (uint32_t t0 = 0; t0 < n_tokens; t0 += kQ) chunk(t0, std::min(kQ, n_tokens - t0));
    for (uint32_t i = 0; i < hd_; ++i)
      for (uint32_t k = 0; k < ds_; ++k) state[uint64_t(i) * ds_ + k] = st_[size_t(k) * hd_ + i];
  }

 private:
  static constexpr uint32_t kQ = kMamba2Chunk;

  void chunk(uint32_t t0, uint32_t n) {
    float cum = 0.0f;
    for (uint32_t t = 0; t < n; ++t) {
      const HeadRows r = head_rows(a_, h_, t0 + t);
      dt_[t] = scan_softplus(a_.dt.row(t0 + t)[h_] + a_.dt_bias);
      cum += dt_[t] * a_.a;
      cs_[t] = cum;
      C_[t] = r.C;
      std::memcpy(&x_[size_t(t) * hd_], r.x, sizeof(float) * hd_);
      for (uint32_t k = 0; k < ds_; ++k) bt_[size_t(k) * kQ + t] = r.B[k];
    }
    // W[t][j] = exp(cs_t - cs_j) dt_j (C_t . B_j) for j <= t.
    for (uint32_t t = 0; t < n; ++t) {
      float* w = &g_[size_t(t) * kQ];
      std::fill(w, w + t + 1, 0.0f);
      for (uint32_t k = 0; k < ds_; ++k) {
        const float c = C_[t][k];
        const float* b = &bt_[size_t(k) * kQ];
        for (uint32_t j = 0; j <= t; ++j) w[j] += c * b[j];
      }
      for (uint32_t j = 0; j <= t; ++j) w[j] *= std::exp(cs_[t] - cs_[j]) * dt_[j];
    }
    for (uint32_t t = 0; t < n; t += 4) outputs(t0, t, std::min(4u, n - t));
    // The state over the whole chunk.
    const float end = cs_[n - 1], decay = std::exp(end);
    for (uint32_t j = 0; j < n; ++j) u_[j] = std::exp(end - cs_[j]) * dt_[j];
    for (uint32_t k = 0; k < ds_; ++k) {
      float* s = &st_[size_t(k) * hd_];
      const float* b = &bt_[size_t(k) * kQ];
      for (uint32_t i = 0; i < hd_; ++i) s[i] *= decay;
      for (uint32_t j = 0; j < n; ++j) {
        const float c = u_[j] * b[j];
        const float* x = &x_[size_t(j) * hd_];
        for (uint32_t i = 0; i < hd_; ++i) s[i] += c * x[i];
      }
    }
  }

  // Tokens t .. t + m - 1 (m <= 4) of the chunk: one pass over the carried state serves them all.
  void outputs(uint32_t t0, uint32_t t, uint32_t m) {
    std::fill(y_.begin(), y_.end(), 0.0f);
    for (uint32_t k = 0; k < ds_; ++k) {
      const float* s = &st_[size_t(k) * hd_];
      for (uint32_t q = 0; q < m; ++q) {
        const float c = C_[t + q][k];
        float* y = &y_[size_t(q) * hd_];
        for (uint32_t i = 0; i < hd_; ++i) y[i] += c * s[i];
      }
    }
    for (uint32_t q = 0; q < m; ++q) {
      float* y = &y_[size_t(q) * hd_];
      const float e = std::exp(cs_[t + q]);
      for (uint32_t i = 0; i < hd_; ++i) y[i] *= e;
      const float* w = &g_[size_t(t + q) * kQ];
      for (uint32_t j = 0; j <= t + q; ++j) {
        const float* x = &x_[size_t(j) * hd_];
        for (uint32_t i = 0; i < hd_; ++i) y[i] += w[j] * x[i];
      }
      const float* x = &x_[size_t(t + q) * hd_];
      float* o = a_.out.row(t0 + t + q) + uint64_t(h_) * hd_;
      for (uint32_t i = 0; i < hd_; ++i) o[i] = y[i] + x[i] * a_.d;
    }
  }

  const Mamba2HeadArgs& a_;
  const uint32_t h_, hd_, ds_;
  std::vector<float> st_;  // the state transposed: st_[k * head_dim + i] = S[i][k]
  std::vector<float> bt_;  // the chunk's B transposed: bt_[k * kQ + j] = B_j[k]
  std::vector<float> g_;   // W[t][j] at t * kQ + j
  std::vector<float> x_;   // the chunk's x rows
  std::vector<float> y_;   // up to 4 tokens' outputs
  float dt_[kQ], cs_[kQ], u_[kQ];
  const float* C_[kQ];
};

}  // namespace

void mamba2_scan_head(const Mamba2HeadArgs& a, uint32_t h, float* state, uint32_t n_tokens,
                      bool fresh) {
  if (a.n_group == 0 || a.n_head % a.n_group != 0)
    throw std::invalid_argument("mamba2_scan: heads not a multiple of the groups");
  if (n_tokens >= a.chunk_min_tokens && n_tokens > 0) {
    ChunkedScan(a, h).run(state, n_tokens, fresh);
    return;
  }
  if (fresh) std::memset(state, 0, sizeof(float) * a.head_dim * a.d_state);
  scan_recurrent(a, h, state, n_tokens);
}

}  // namespace vkllm::cpu
