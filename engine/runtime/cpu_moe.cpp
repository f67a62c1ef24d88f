#include "engine/runtime/cpu_moe.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/cpu/moe_route.h"
#include "engine/cpu/ops.h"
#include "engine/gguf/quants.h"

namespace vkllm::runtime {

namespace {

// Expert e's rows of a stacked [cols, rows, n_expert] tensor.
cpu::WeightView expert_view(const HostTensor& t, uint32_t e) {
  if (t.shape.size() != 3 || e >= t.shape[2]) {
    throw std::logic_error(t.name + " is not a stacked expert tensor");
  }
  // A stacked tensor's gate or up half steps over the other half's rows (expert_stride).
  const uint64_t bytes = gguf::row_bytes(t.type, t.shape[0]) * t.shape[1];
  return {t.type, t.data + e * (t.expert_stride ? t.expert_stride : bytes), t.shape[0], t.shape[1]};
}

// Adds bias row `e` (n values of a [n, n_expert] F32 tensor) to each of `rows` rows of n.
void add_expert_bias(float* x, uint32_t rows, const float* bias, uint32_t e, uint32_t n) {
  if (bias == nullptr) return;
  const float* b = bias + uint64_t(e) * n;
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t i = 0; i < n; ++i) x[uint64_t(r) * n + i] += b[i];
}

// gpt-oss's clamped SwiGLU over n values (ggml's swiglu_oai with alpha 1.702, limit 7).
void swiglu_oai(const float* gate, const float* up, float* out, uint64_t n) {
  constexpr float kAlpha = 1.702f, kLimit = 7.0f;
  for (uint64_t i = 0; i < n; ++i) {
    const float g = std::min(gate[i], kLimit);
    const float u = std::clamp(up[i], -kLimit, kLimit);
    out[i] = g / (1.0f + std::exp(-kAlpha * g)) * (u + 1.0f);
  }
}

template <class T>
T* grown(std::vector<T>& v, uint64_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

}  // namespace

void check_cpu_moe_weights(const HostModel& model) {
  const model::ModelSpec& spec = model.spec();
  for (uint32_t l = 0; l < spec.n_layer; ++l) {
    if (!spec.is_moe_layer(l)) continue;
    for (model::Weight w :
         {model::Weight::FfnGateExps, model::Weight::FfnUpExps, model::Weight::FfnDownExps}) {
      if (w == model::Weight::FfnGateExps && spec.moe_up_only) continue;
      const HostTensor& t = model.get(w, l);
      if (!cpu::matmul_supports(t.type) || t.shape.size() != 3) {
        throw std::runtime_error(t.name + ": the CPU backend has no expert kernel for it (" +
                                 std::string(gguf::type_name(t.type)) + ")");
      }
    }
  }
}

void cpu_moe_ffn(const MoeSpec& m, uint32_t T, const CpuMoeWeights& w, const float* x,
                 uint32_t x_stride, float* out, uint32_t out_stride, CpuMoeScratch& s,
                 cpu::ThreadPool& pool, cpu::MatmulWorkspace& ws, cpu::Isa isa) {
  if (T == 0) return;
  const uint32_t E = m.n_embd, F = m.n_ff, K = m.n_used;
  if (x_stride == 0) x_stride = E;
  if (out_stride == 0) out_stride = E;

  // Router logits, then each token's experts and weights.
  const cpu::WeightView router{w.router->type, w.router->data, w.router->cols(), w.router->rows()};
  const cpu::Product logits{&router, grown(s.logits, uint64_t(T) * m.n_expert), m.n_expert, false};
  if (w.router_x) {
    // Packed router rows are as wide as the router's columns (Nemotron 3 Super's experts work
    // in a narrower latent width than the router reads).
    const uint64_t rx_stride = w.router_x_stride ? w.router_x_stride : w.router->cols();
    cpu::matmul(std::span(&logits, 1), w.router_x, rx_stride, T, pool, ws, isa);
  } else {
    cpu::matmul(std::span(&logits, 1), x, x_stride, T, pool, ws, isa);
  }
  add_expert_bias(s.logits.data(), T, w.router_bias, 0, m.n_expert);
  cpu::MoeRouteArgs r;
  r.softmax_after_top_k = m.softmax_after_top_k;
  r.sigmoid = m.sigmoid;
  r.sigmoid_scores = m.sigmoid_scores;
  r.select_bias = m.select_bias ? w.select_bias : nullptr;
  r.logits = s.logits.data();
  r.n_expert = m.n_expert;
  r.n_used = K;
  r.norm_weights = m.norm_weights;
  r.ids = grown(s.ids, uint64_t(T) * K);
  r.weights = grown(s.weights, uint64_t(T) * K);
  cpu::moe_route(r, 0, T);
  // A per-expert output scale is linear in the expert's output: it joins the expert's weight.
  if (w.down_scale)
    for (uint64_t p = 0; p < uint64_t(T) * K; ++p) s.weights[p] *= w.down_scale[s.ids[p]];
  if (m.weight_scale != 1.0f)
    for (uint64_t p = 0; p < uint64_t(T) * K; ++p) s.weights[p] *= m.weight_scale;

  // Expert by expert: its (token, rank) pairs' rows through gate/up, GLU and down.
  float* pair_out = grown(s.pair_out, uint64_t(T) * K * E);
  grown(s.pairs, uint64_t(T) * K);
  for (uint32_t e = 0; e < m.n_expert; ++e) {
    uint32_t n = 0;
    for (uint32_t p = 0; p < T * K; ++p)
      if (s.ids[p] == e) s.pairs[n++] = p;
    if (n == 0) continue;
    float* xg = grown(s.x, uint64_t(n) * E);
    for (uint32_t i = 0; i < n; ++i)
      std::memcpy(xg + uint64_t(i) * E, x + uint64_t(s.pairs[i] / K) * x_stride, 4ull * E);
    // Llama 4: the pair's weight scales the expert's input (its output then counts once).
    if (m.weight_before_ffn)
      for (uint32_t i = 0; i < n; ++i)
        for (uint32_t j = 0; j < E; ++j) xg[uint64_t(i) * E + j] *= s.weights[s.pairs[i]];
    const cpu::WeightView up = expert_view(*w.up, e), down = expert_view(*w.down, e);
    const cpu::WeightView gate = m.gated ? expert_view(*w.gate, e) : up;
    const cpu::Product gate_up[] = {{&up, grown(s.up, uint64_t(n) * F), F, false},
                                    {&gate, grown(s.gate, uint64_t(n) * F), F, false}};
    cpu::matmul(std::span(gate_up, m.gated ? 2 : 1), xg, E, n, pool, ws, isa);
    add_expert_bias(s.gate.data(), n, w.gate_bias, e, F);
    add_expert_bias(s.up.data(), n, w.up_bias, e, F);
    if (!m.gated) {
      // Up-only experts (Nemotron-H MoE): relu(u)^2.
      float* act = grown(s.act, uint64_t(n) * F);
      for (uint64_t i = 0; i < uint64_t(n) * F; ++i) {
        const float u = std::max(s.up[i], 0.0f);
        act[i] = u * u;
      }
    } else if (m.act == GluAct::SwigluOai) {
      swiglu_oai(s.gate.data(), s.up.data(), grown(s.act, uint64_t(n) * F), uint64_t(n) * F);
    } else {
      cpu::GluArgs g;
      g.gate = s.gate.data();
      g.up = s.up.data();
      g.out = grown(s.act, uint64_t(n) * F);
      g.n = F;
      g.act = m.act == GluAct::Silu ? cpu::GluActivation::Silu : cpu::GluActivation::GeluTanh;
      cpu::glu(g, 0, n, isa);
    }
    const cpu::Product d{&down, grown(s.down, uint64_t(n) * E), E, false};
    cpu::matmul(std::span(&d, 1), s.act.data(), F, n, pool, ws, isa);
    add_expert_bias(s.down.data(), n, w.down_bias, e, E);
    for (uint32_t i = 0; i < n; ++i)
      std::memcpy(pair_out + uint64_t(s.pairs[i]) * E, s.down.data() + uint64_t(i) * E, 4ull * E);
  }

  // Each token's weighted sum over its experts in rank order, then into the residual.
  pool.parallel_for(T, [&](uint32_t t, unsigned) {
    float* o = out + uint64_t(t) * out_stride;
    for (uint32_t i = 0; i < E; ++i) {
      float acc = 0;
      for (uint32_t k = 0; k < K; ++k)
        acc += (m.weight_before_ffn ? 1.0f : s.weights[uint64_t(t) * K + k]) *
               pair_out[(uint64_t(t) * K + k) * E + i];
      o[i] = m.accumulate ? o[i] + acc : acc;
    }
  });
}

}  // namespace vkllm::runtime
