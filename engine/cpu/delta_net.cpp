#include "engine/cpu/delta_net.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "engine/model/model_spec.h"

namespace vkllm::cpu {

namespace {

float dn_silu(float x) {
  return x / (1.0f + std::exp(-x));
}
float dn_sigmoid(float x) {
  return 1.0f / (1.0f + std::exp(-x));
}
// ggml's softplus: linear above 20.
float dn_softplus(float x) {
  return x > 20.0f ? x : std::log1p(std::exp(x));
}

// x / sqrt(sum x^2 + eps) (llama.cpp's build_gdn_l2_norm: an RMS norm with eps / n, scaled by
// 1 / sqrt(n)).
void l2_normalize(const float* x, float* y, uint32_t n, float eps) {
  float sum = 0.0f;
  for (uint32_t i = 0; i < n; ++i) sum += x[i] * x[i];
  const float fn = static_cast<float>(n);
  const float scale = 1.0f / std::sqrt(sum / fn + eps / fn) / std::sqrt(fn);
  for (uint32_t i = 0; i < n; ++i) y[i] = x[i] * scale;
}

// s *= scale, then s . b, in one pass (partial sums as dn_dot's).
float dn_scale_dot(float* s, float scale, const float* b, uint32_t n) {
  float acc[8] = {};
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (uint32_t l = 0; l < 8; ++l) {
      s[i + l] *= scale;
      acc[l] += s[i + l] * b[i + l];
    }
  for (; i < n; ++i) {
    s[i] *= scale;
    acc[0] += s[i] * b[i];
  }
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

// s += f * a, then s . b, in one pass.
float dn_axpy_dot(float* s, float f, const float* a, const float* b, uint32_t n) {
  float acc[8] = {};
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (uint32_t l = 0; l < 8; ++l) {
      s[i + l] += f * a[i + l];
      acc[l] += s[i + l] * b[i + l];
    }
  for (; i < n; ++i) {
    s[i] += f * a[i];
    acc[0] += s[i] * b[i];
  }
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

// a . b with eight partial sums, which the compiler keeps in vector registers (one running sum
// would be a chain of dependent scalar adds: floats do not reassociate).
float dn_dot(const float* a, const float* b, uint32_t n) {
  float acc[8] = {};
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (uint32_t l = 0; l < 8; ++l) acc[l] += a[i + l] * b[i + l];
  for (; i < n; ++i) acc[0] += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

}  // namespace

void ssm_conv(SeqRows x, SeqRows out, const float* w, float* state, uint32_t channels,
              uint32_t kernel, uint32_t n_tokens, bool fresh, uint32_t begin, uint32_t end,
              const float* bias) {
  constexpr uint32_t kMax = model::kMaxShortConvLength;
  if (kernel < 2 || kernel > kMax) throw std::invalid_argument("ssm_conv: kernel length");
  const uint32_t d = kernel - 1;
  for (uint32_t c = begin; c < end; ++c) {
    float win[kMax];
    for (uint32_t k = 0; k < d; ++k) win[k] = fresh ? 0.0f : state[uint64_t(k) * channels + c];
    const float* taps = w + uint64_t(c) * kernel;
    for (uint32_t t = 0; t < n_tokens; ++t) {
      win[d] = x.row(t)[c];
      float sum = 0.0f;
      for (uint32_t k = 0; k < kernel; ++k) sum += win[k] * taps[k];
      if (bias) sum += bias[c];
      out.row(t)[c] = dn_silu(sum);
      for (uint32_t k = 0; k < d; ++k) win[k] = win[k + 1];
    }
    for (uint32_t k = 0; k < d; ++k) state[uint64_t(k) * channels + c] = win[k];
  }
}

void delta_net_head(const DeltaNetHeadArgs& a, uint32_t h, float* state, uint32_t n_tokens,
                    bool fresh) {
  constexpr uint32_t kMax = model::kMaxDeltaNetHeadDim;
  const uint32_t d = a.head_dim;
  if (d == 0 || d > kMax) throw std::invalid_argument("delta_net: head size");
  if (fresh) std::memset(state, 0, sizeof(float) * d * d);
  const uint32_t r = a.n_v_heads / a.n_k_heads;
  const uint32_t kh = a.grouped ? h / r : h % a.n_k_heads;
  const uint32_t ab = a.grouped ? (h / r) * 2 * r + h % r : h;  // alpha's and beta's index
  const uint64_t key_dim = uint64_t(a.n_k_heads) * d;
  const float out_scale = 1.0f / std::sqrt(static_cast<float>(d));
  float q[kMax], k[kMax];
  for (uint32_t t = 0; t < n_tokens; ++t) {
    const float* row = a.qkv.row(t);
    l2_normalize(row + uint64_t(kh) * d, q, d, a.eps);
    l2_normalize(row + key_dim + uint64_t(kh) * d, k, d, a.eps);
    const float* v = row + 2 * key_dim + uint64_t(h) * d;
    const float decay = std::exp(dn_softplus(a.alpha.row(t)[ab] + a.dt_bias) * a.a);
    const float beta = dn_sigmoid(a.beta.row(t)[ab]);
    float* o = a.out.row(t) + uint64_t(h) * d;
    for (uint32_t j = 0; j < d; ++j) {
      float* s = state + uint64_t(j) * d;  // S[.][j]
      const float delta = (v[j] - dn_scale_dot(s, decay, k, d)) * beta;
      o[j] = dn_axpy_dot(s, delta, k, q, d) * out_scale;
    }
  }
}

void delta_net_head_chunked(const DeltaNetHeadArgs& a, uint32_t h, float* state, uint32_t n_tokens,
                            bool fresh) {
  constexpr uint32_t C = kDeltaNetChunk;
  const uint32_t d = a.head_dim;
  if (d == 0 || d > model::kMaxDeltaNetHeadDim) throw std::invalid_argument("delta_net: head size");
  if (fresh) std::memset(state, 0, sizeof(float) * d * d);
  const uint32_t r = a.n_v_heads / a.n_k_heads;
  const uint32_t kh = a.grouped ? h / r : h % a.n_k_heads;
  const uint32_t ab = a.grouped ? (h / r) * 2 * r + h % r : h;
  const uint64_t key_dim = uint64_t(a.n_k_heads) * d;
  const float out_scale = 1.0f / std::sqrt(static_cast<float>(d));
  // Per chunk: q, k (normalised; q times out_scale), the new values delta, the products of q and
  // k with the incoming state, and the chunk's C x C matrices. A pool thread reuses its buffers.
  thread_local std::vector<float> buf;
  buf.resize(4 * size_t(C) * d + 2 * size_t(C) * C + 2 * C + size_t(d) * d);
  float* q = buf.data();
  float* k = q + size_t(C) * d;
  float* dl = k + size_t(C) * d;  // R, then delta (row t: the chunk's token t)
  float* qs = dl + size_t(C) * d;
  float* am = qs + size_t(C) * d;  // A[t][s] = beta_t e^(G_t - G_s) k_t . k_s, s < t
  float* pm = am + size_t(C) * C;  // P[t][s] = e^(G_t - G_s) q_t . k_s, s <= t
  float* gc = pm + size_t(C) * C;  // G_t: the cumulative log decay
  float* bt = gc + C;              // beta_t
  float* st = bt + C;              // the incoming state transposed: S[i][.] contiguous
  bool zero_state = fresh;
  for (uint32_t c0 = 0; c0 < n_tokens; c0 += C) {
    const uint32_t n = std::min(C, n_tokens - c0);
    float g = 0.0f;
    for (uint32_t t = 0; t < n; ++t) {
      const float* row = a.qkv.row(c0 + t);
      l2_normalize(row + uint64_t(kh) * d, q + size_t(t) * d, d, a.eps);
      for (uint32_t i = 0; i < d; ++i) q[size_t(t) * d + i] *= out_scale;
      l2_normalize(row + key_dim + uint64_t(kh) * d, k + size_t(t) * d, d, a.eps);
      g += dn_softplus(a.alpha.row(c0 + t)[ab] + a.dt_bias) * a.a;
      gc[t] = g;
      bt[t] = dn_sigmoid(a.beta.row(c0 + t)[ab]);
    }
    // R_t = beta_t (v_t - e^(G_t) S^T k_t) and q_t's read of the incoming state, e^(G_t) S^T q_t:
    // sums of the rows of S (the state transposed first), which vectorise over j.
    std::fill(dl, dl + size_t(n) * d, 0.0f);
    std::fill(qs, qs + size_t(n) * d, 0.0f);
    if (!zero_state) {
      for (uint32_t j = 0; j < d; ++j)
        for (uint32_t i = 0; i < d; ++i) st[size_t(i) * d + j] = state[uint64_t(j) * d + i];
      for (uint32_t t = 0; t < n; ++t) {
        float* ks = dl + size_t(t) * d;
        float* qst = qs + size_t(t) * d;
        for (uint32_t i = 0; i < d; ++i) {
          const float* srow = st + size_t(i) * d;  // S[i][.]
          const float kv = k[size_t(t) * d + i], qv = q[size_t(t) * d + i];
          for (uint32_t j = 0; j < d; ++j) {
            ks[j] += kv * srow[j];
            qst[j] += qv * srow[j];
          }
        }
      }
    }
    for (uint32_t t = 0; t < n; ++t) {
      const float* v = a.qkv.row(c0 + t) + 2 * key_dim + uint64_t(h) * d;
      const float gt = std::exp(gc[t]);
      for (uint32_t j = 0; j < d; ++j) {
        dl[size_t(t) * d + j] = bt[t] * (v[j] - gt * dl[size_t(t) * d + j]);
        qs[size_t(t) * d + j] *= gt;
      }
    }
    for (uint32_t t = 0; t < n; ++t)
      for (uint32_t s = 0; s <= t; ++s) {
        const float kk = dn_dot(k + size_t(t) * d, k + size_t(s) * d, d);
        const float qk = dn_dot(q + size_t(t) * d, k + size_t(s) * d, d);
        const float decay = std::exp(gc[t] - gc[s]);
        am[size_t(t) * C + s] = bt[t] * decay * kk;
        pm[size_t(t) * C + s] = decay * qk;
      }
    // (I + A) delta = R by forward substitution, row by row.
    for (uint32_t t = 1; t < n; ++t) {
      float* dt = dl + size_t(t) * d;
      for (uint32_t s = 0; s < t; ++s) {
        const float f = am[size_t(t) * C + s];
        const float* ds = dl + size_t(s) * d;
        for (uint32_t j = 0; j < d; ++j) dt[j] -= f * ds[j];
      }
    }
    for (uint32_t t = 0; t < n; ++t) {
      float* o = a.out.row(c0 + t) + uint64_t(h) * d;
      const float* qst = qs + size_t(t) * d;
      for (uint32_t j = 0; j < d; ++j) o[j] = qst[j];
      for (uint32_t s = 0; s <= t; ++s) {
        const float f = pm[size_t(t) * C + s];
        const float* ds = dl + size_t(s) * d;
        for (uint32_t j = 0; j < d; ++j) o[j] += f * ds[j];
      }
    }
    // S <- e^(G_last) S + sum_t e^(G_last - G_t) k_t delta_t^T (row j of the state is S[.][j]).
    const float g_last = gc[n - 1];
    for (uint32_t t = 0; t < n; ++t) {
      const float f = std::exp(g_last - gc[t]);
      for (uint32_t i = 0; i < d; ++i) k[size_t(t) * d + i] *= f;
    }
    const float decay = std::exp(g_last);
    for (uint32_t j = 0; j < d; ++j) {
      float* s = state + uint64_t(j) * d;
      for (uint32_t i = 0; i < d; ++i) s[i] *= decay;
      for (uint32_t t = 0; t < n; ++t) {
        const float f = dl[size_t(t) * d + j];
        const float* kt = k + size_t(t) * d;
        for (uint32_t i = 0; i < d; ++i) s[i] += f * kt[i];
      }
    }
    zero_state = false;
  }
}

void gate_rows(GateKind act, SeqRows x, SeqRows gate, uint32_t n, uint32_t begin, uint32_t end,
               bool per_row) {
  for (uint32_t r = begin; r < end; ++r) {
    float* xr = x.row(r);
    const float* g = gate.row(r);
    for (uint32_t i = 0; i < n; ++i) {
      const float v = g[per_row ? 0 : i];
      xr[i] *= act == GateKind::Sigmoid ? dn_sigmoid(v)
               : act == GateKind::Silu  ? dn_silu(v)
                                        : std::max(v, 0.0f);
    }
  }
}

}  // namespace vkllm::cpu
