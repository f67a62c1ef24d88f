// The scalar reference's mixture-of-experts FFN (ReferenceModel::moe) and routing.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/model/weight_names.h"
#include "tests/reference/reference_forward.h"

namespace vkllm::reference {

MoeRoute reference_moe_route(std::span<const float> logits, uint32_t n_used, bool norm) {
  const double mx = *std::max_element(logits.begin(), logits.end());
  std::vector<double> e(logits.size());
  double sum = 0;
  for (size_t i = 0; i < e.size(); ++i) sum += e[i] = std::exp(logits[i] - mx);
  std::vector<float> probs(e.size());
  for (size_t i = 0; i < e.size(); ++i) probs[i] = static_cast<float>(e[i] / sum);
  std::vector<uint32_t> order(probs.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return probs[a] > probs[b]; });
  MoeRoute r;
  r.ids.assign(order.begin(), order.begin() + n_used);
  double total = 0;
  for (uint32_t id : r.ids) {
    r.weights.push_back(probs[id]);
    total += probs[id];
  }
  if (norm) {
    for (float& w : r.weights) w = static_cast<float>(w / std::max(total, 6.103515625e-5));
  }
  return r;
}

MoeRoute reference_moe_route_top_k_softmax(std::span<const float> logits, uint32_t n_used) {
  std::vector<uint32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return logits[a] > logits[b]; });
  MoeRoute r;
  r.ids.assign(order.begin(), order.begin() + n_used);
  double total = 0;
  for (uint32_t id : r.ids) total += std::exp(double(logits[id]) - logits[r.ids[0]]);
  for (uint32_t id : r.ids)
    r.weights.push_back(
        static_cast<float>(std::exp(double(logits[id]) - logits[r.ids[0]]) / total));
  return r;
}

void ReferenceModel::load_moe(const gguf::GgufFile& f, uint32_t l, Layer& L) const {
  using model::Weight;
  L.router = load_matrix(f, model::weight_name(Weight::FfnGateInp, l));
  const Matrix gate = load_matrix(f, model::weight_name(Weight::FfnGateExps, l));
  const Matrix up = load_matrix(f, model::weight_name(Weight::FfnUpExps, l));
  const Matrix down = load_matrix(f, model::weight_name(Weight::FfnDownExps, l));
  const uint32_t F = spec_.n_ff_exp, E = spec_.n_embd;
  for (uint32_t e = 0; e < spec_.n_expert; ++e) {
    L.gate_e.push_back(gate.slice(e * F, F));
    L.up_e.push_back(up.slice(e * F, F));
    L.down_e.push_back(down.slice(e * E, E));
  }
  if (spec_.n_ff_shexp > 0) {
    L.gate_sh = load_matrix(f, model::weight_name(Weight::FfnGateShexp, l));
    L.up_sh = load_matrix(f, model::weight_name(Weight::FfnUpShexp, l));
    L.down_sh = load_matrix(f, model::weight_name(Weight::FfnDownShexp, l));
    if (spec_.moe_shexp_gated)
      L.gate_inp_sh = load_matrix(f, model::weight_name(Weight::FfnGateInpShexp, l));
  }
  if (!spec_.moe_biases) return;
  L.router_b = load_matrix(f, model::weight_name(Weight::FfnGateInpBias, l));
  const Matrix gate_b = load_matrix(f, model::weight_name(Weight::FfnGateExpsBias, l));
  const Matrix up_b = load_matrix(f, model::weight_name(Weight::FfnUpExpsBias, l));
  const Matrix down_b = load_matrix(f, model::weight_name(Weight::FfnDownExpsBias, l));
  for (uint32_t e = 0; e < spec_.n_expert; ++e) {
    L.gate_eb.push_back(gate_b.slice(e, 1));
    L.up_eb.push_back(up_b.slice(e, 1));
    L.down_eb.push_back(down_b.slice(e, 1));
  }
}

namespace {
void add_row(std::vector<float>& x, const std::vector<ReferenceMatrix>& rows, uint32_t e) {
  if (rows.empty()) return;
  for (size_t i = 0; i < x.size(); ++i) x[i] += rows[e].w[i];
}
}  // namespace

std::vector<float> ReferenceModel::moe(const Layer& L, const std::vector<float>& h) const {
  std::vector<float> logits = matvec(L.router, h);
  for (size_t i = 0; i < L.router_b.w.size(); ++i) logits[i] += L.router_b.w[i];
  const MoeRoute route =
      spec_.moe_gating == model::MoeGating::SoftmaxTopK
          ? reference_moe_route_top_k_softmax(logits, spec_.n_expert_used)
          : reference_moe_route(logits, spec_.n_expert_used, spec_.moe_norm_weights);
  float best_unselected = -INFINITY;
  for (uint32_t e = 0; e < logits.size(); ++e) {
    if (std::find(route.ids.begin(), route.ids.end(), e) == route.ids.end())
      best_unselected = std::max(best_unselected, logits[e]);
  }
  if (!route_gaps_.empty())
    route_gaps_.back().push_back(logits[route.ids.back()] - best_unselected);
  std::vector<double> sum(h.size(), 0.0);
  for (size_t k = 0; k < route.ids.size(); ++k) {
    const uint32_t e = route.ids[k];
    std::vector<float> g = matvec(L.gate_e[e], h);
    std::vector<float> u = matvec(L.up_e[e], h);
    add_row(g, L.gate_eb, e);
    add_row(u, L.up_eb, e);
    for (size_t i = 0; i < g.size(); ++i) {
      if (spec_.activation == model::Activation::SwigluOai) {  // ggml's swiglu_oai
        const double x = std::min(double(g[i]), 7.0), y = std::clamp(double(u[i]), -7.0, 7.0);
        g[i] = static_cast<float>(x / (1.0 + std::exp(-1.702 * x)) * (y + 1.0));
      } else {
        g[i] = static_cast<float>(g[i] / (1.0 + std::exp(-double(g[i]))) * u[i]);
      }
    }
    std::vector<float> d = matvec(L.down_e[e], g);
    add_row(d, L.down_eb, e);
    for (size_t i = 0; i < d.size(); ++i) sum[i] += double(route.weights[k]) * d[i];
  }
  if (spec_.n_ff_shexp > 0) {  // the shared expert, times sigmoid(its gate's logit)
    std::vector<float> g = matvec(L.gate_sh, h);
    const std::vector<float> u = matvec(L.up_sh, h);
    for (size_t i = 0; i < g.size(); ++i)
      g[i] = static_cast<float>(g[i] / (1.0 + std::exp(-double(g[i]))) * u[i]);
    const std::vector<float> d = matvec(L.down_sh, g);
    double scale = 1.0;
    if (spec_.moe_shexp_gated) scale = 1.0 / (1.0 + std::exp(-double(matvec(L.gate_inp_sh, h)[0])));
    for (size_t i = 0; i < d.size(); ++i) sum[i] += scale * d[i];
  }
  return std::vector<float>(sum.begin(), sum.end());
}

}  // namespace vkllm::reference
