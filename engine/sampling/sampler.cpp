#include "engine/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace vkllm::sampling {

namespace {
bool by_logit_desc(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit;
}

int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// Probabilities of the (sorted) candidates renormalised over what is left.
void renormalise(std::vector<Candidate>& c) {
  double sum = 0;
  for (auto& x : c) sum += x.p;
  for (auto& x : c) x.p = static_cast<float>(x.p / sum);
}
}  // namespace

Sampler::Sampler(const SamplingParams& params) : params_(params) {
  if (params_.mirostat < 0 || params_.mirostat > 2) {
    throw std::invalid_argument("mirostat must be 0, 1 or 2");
  }
  const uint64_t seed = params_.seed >= 0
                            ? static_cast<uint64_t>(params_.seed)
                            : (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  rng_.seed(seed);
  const int32_t n = params_.repeat_last_n < 0 ? params_.num_ctx : params_.repeat_last_n;
  penalty_window_ = static_cast<size_t>(std::max(n, 0));
  mu_ = 2.0f * params_.mirostat_tau;
}

void Sampler::accept(int32_t token) {
  if (penalty_window_ == 0) return;
  recent_.push_back(token);
  ++recent_counts_[token];
  if (recent_.size() > penalty_window_) {
    int32_t old = recent_.front();
    recent_.pop_front();
    if (--recent_counts_[old] == 0) recent_counts_.erase(old);
  }
}

void Sampler::apply_penalties(std::vector<Candidate>& c) const {
  const bool active = params_.repeat_penalty != 1.0f || params_.presence_penalty != 0.0f ||
                      params_.frequency_penalty != 0.0f;
  if (!active || recent_counts_.empty()) return;
  // Candidates are indexed by token id here (the full vocabulary, in order).
  for (auto [id, count] : recent_counts_) {
    if (id < 0 || static_cast<size_t>(id) >= c.size()) continue;
    float& l = c[id].logit;
    if (params_.repeat_penalty != 1.0f) {
      l = l <= 0 ? l * params_.repeat_penalty : l / params_.repeat_penalty;
    }
    l -= static_cast<float>(count) * params_.frequency_penalty + params_.presence_penalty;
  }
}

void Sampler::top_k(std::vector<Candidate>& c, int32_t k) {
  if (k <= 0 || static_cast<size_t>(k) >= c.size()) {
    std::sort(c.begin(), c.end(), by_logit_desc);
    return;
  }
  std::partial_sort(c.begin(), c.begin() + k, c.end(), by_logit_desc);
  c.resize(k);
}

void Sampler::softmax(std::vector<Candidate>& c) {
  if (!std::is_sorted(c.begin(), c.end(), by_logit_desc)) {
    std::sort(c.begin(), c.end(), by_logit_desc);
  }
  const float max = c.front().logit;
  double sum = 0;
  for (auto& x : c) {
    x.p = std::exp(x.logit - max);
    sum += x.p;
  }
  for (auto& x : c) x.p = static_cast<float>(x.p / sum);
}

void Sampler::top_p(std::vector<Candidate>& c, float p) {
  if (p >= 1.0f) return;
  double cum = 0;
  size_t keep = c.size();
  for (size_t i = 0; i < c.size(); ++i) {
    cum += c[i].p;
    if (cum >= p) {
      keep = i + 1;
      break;
    }
  }
  c.resize(keep);
  renormalise(c);
}

void Sampler::min_p(std::vector<Candidate>& c, float p) {
  if (p <= 0.0f) return;
  const float threshold = c.front().p * p;
  size_t keep = 1;
  while (keep < c.size() && c[keep].p >= threshold) ++keep;
  c.resize(keep);
  renormalise(c);
}

// Locally typical sampling: keep the tokens whose surprise is closest to the distribution's
// entropy until their mass reaches p.
void Sampler::typical(std::vector<Candidate>& c, float p) {
  if (p >= 1.0f) return;
  double entropy = 0;
  for (auto& x : c)
    if (x.p > 0) entropy -= x.p * std::log(x.p);
  std::vector<size_t> order(c.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<double> dist(c.size());
  for (size_t i = 0; i < c.size(); ++i) dist[i] = std::abs(-std::log(c[i].p) - entropy);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return dist[a] < dist[b]; });
  double cum = 0;
  size_t keep = order.size();
  for (size_t i = 0; i < order.size(); ++i) {
    cum += c[order[i]].p;
    if (cum > p) {
      keep = i + 1;
      break;
    }
  }
  std::vector<Candidate> kept;
  kept.reserve(keep);
  for (size_t i = 0; i < keep; ++i) kept.push_back(c[order[i]]);
  std::sort(kept.begin(), kept.end(), by_logit_desc);
  c = std::move(kept);
  renormalise(c);
}

int32_t Sampler::draw(std::vector<Candidate>& c) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  double r = u(rng_);
  double cum = 0;
  for (auto& x : c) {
    cum += x.p;
    if (r < cum) return x.id;
  }
  return c.back().id;  // rounding left r just above the total
}

void Sampler::update_mu(const std::vector<Candidate>&, int32_t, float p_chosen) {
  const float surprise = -std::log2(p_chosen);
  mu_ -= params_.mirostat_eta * (surprise - params_.mirostat_tau);
}

int32_t Sampler::mirostat_v1(std::vector<Candidate>& c) {
  softmax(c);
  const int m = std::min<int>(100, static_cast<int>(c.size()) - 1);
  double sum_ti_bi = 0, sum_ti_sq = 0;
  for (int i = 0; i < m; ++i) {
    double t = std::log(double(i + 2) / double(i + 1));
    double b = std::log(double(c[i].p) / double(c[i + 1].p));
    sum_ti_bi += t * b;
    sum_ti_sq += t * t;
  }
  const double s_hat = sum_ti_sq > 0 ? sum_ti_bi / sum_ti_sq : 1.0;
  const double eps = s_hat - 1.0;
  const double n = static_cast<double>(c.size());
  double k = std::pow((eps * std::pow(2.0, mu_)) / (1.0 - std::pow(n, -eps)), 1.0 / s_hat);
  if (!std::isfinite(k)) k = n;
  const size_t keep = std::clamp<size_t>(static_cast<size_t>(std::llround(k)), 1, c.size());
  c.resize(keep);
  renormalise(c);
  int32_t id = draw(c);
  auto it = std::find_if(c.begin(), c.end(), [&](const Candidate& x) { return x.id == id; });
  update_mu(c, id, it->p);
  return id;
}

int32_t Sampler::mirostat_v2(std::vector<Candidate>& c) {
  softmax(c);
  size_t keep = 1;
  while (keep < c.size() && -std::log2(c[keep].p) <= mu_) ++keep;
  c.resize(keep);
  renormalise(c);
  int32_t id = draw(c);
  auto it = std::find_if(c.begin(), c.end(), [&](const Candidate& x) { return x.id == id; });
  update_mu(c, id, it->p);
  return id;
}

int32_t Sampler::sample(std::span<const float> logits) {
  if (logits.empty()) throw std::invalid_argument("sample: empty logits");
  const bool penalties = !recent_counts_.empty() &&
                         (params_.repeat_penalty != 1.0f || params_.presence_penalty != 0.0f ||
                          params_.frequency_penalty != 0.0f);
  if (greedy() && !penalties) return argmax(logits);

  std::vector<Candidate> c(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) c[i] = {static_cast<int32_t>(i), logits[i]};
  apply_penalties(c);
  if (greedy()) {
    return std::max_element(c.begin(), c.end(), [](auto& a, auto& b) { return a.logit < b.logit; })
        ->id;
  }
  if (params_.mirostat != 0) {
    for (auto& x : c) x.logit /= params_.temperature;
    return params_.mirostat == 1 ? mirostat_v1(c) : mirostat_v2(c);
  }
  top_k(c, params_.top_k);
  softmax(c);
  typical(c, params_.typical_p);
  top_p(c, params_.top_p);
  min_p(c, params_.min_p);
  // Temperature last, over the survivors (llama.cpp's order).
  for (auto& x : c) x.logit /= params_.temperature;
  softmax(c);
  return draw(c);
}

}  // namespace vkllm::sampling
