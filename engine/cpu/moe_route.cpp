#include "engine/cpu/moe_route.h"

#include <cmath>
#include <stdexcept>
#include <vector>

namespace vkllm::cpu {

void moe_route(const MoeRouteArgs& a, uint32_t token_begin, uint32_t token_end) {
  if (a.n_used == 0 || a.n_used > a.n_expert) {
    throw std::invalid_argument("moe_route: experts per token must be 1 to n_expert");
  }
  std::vector<float> probs(a.n_expert), score(a.n_expert);
  std::vector<bool> taken(a.n_expert);
  for (uint32_t t = token_begin; t < token_end; ++t) {
    const float* z = a.logits + uint64_t(t) * a.n_expert;
    float mx = -INFINITY;
    for (uint32_t e = 0; e < a.n_expert; ++e) mx = std::max(mx, z[e]);
    double sum = 0;
    for (uint32_t e = 0; e < a.n_expert; ++e) sum += probs[e] = std::exp(z[e] - mx);
    if (a.sigmoid_scores) {
      // Select on the biased scores (probs), weigh by the unbiased ones (score).
      for (uint32_t e = 0; e < a.n_expert; ++e) {
        score[e] = 1.0f / (1.0f + std::exp(-z[e]));
        probs[e] = a.select_bias ? score[e] + a.select_bias[e] : score[e];
      }
    } else if (a.softmax_after_top_k || a.sigmoid) {
      for (uint32_t e = 0; e < a.n_expert; ++e) probs[e] = z[e];  // select on the logits
    } else {
      const float inv = static_cast<float>(1.0 / sum);
      for (float& p : probs) p *= inv;
    }
    // Selection by repeated maxima: n_used is small, and a strict > keeps the lower index on ties.
    std::fill(taken.begin(), taken.end(), false);
    uint32_t* ids = a.ids + uint64_t(t) * a.n_used;
    float* w = a.weights + uint64_t(t) * a.n_used;
    float total = 0;
    for (uint32_t k = 0; k < a.n_used; ++k) {
      uint32_t best = a.n_expert;
      for (uint32_t e = 0; e < a.n_expert; ++e) {
        if (taken[e]) continue;
        // NaN probabilities never win over a number; an all-NaN row still picks distinct experts.
        if (best == a.n_expert || probs[e] > probs[best]) best = e;
      }
      taken[best] = true;
      ids[k] = best;
      w[k] = a.sigmoid_scores ? score[best] : probs[best];
      total += w[k];
    }
    if (a.softmax_after_top_k) {
      const float top = w[0];  // the largest selected logit (NaN-free rows)
      total = 0;
      for (uint32_t k = 0; k < a.n_used; ++k) total += w[k] = std::exp(w[k] - top);
      for (uint32_t k = 0; k < a.n_used; ++k) w[k] /= total;
    }
    if (a.sigmoid) {
      total = 0;
      for (uint32_t k = 0; k < a.n_used; ++k) total += w[k] = 1.0f / (1.0f + std::exp(-w[k]));
    }
    if (a.norm_weights) {
      const float d = std::max(total, 6.103515625e-5f);
      for (uint32_t k = 0; k < a.n_used; ++k) w[k] /= d;
    }
  }
}

}  // namespace vkllm::cpu
