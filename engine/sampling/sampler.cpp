#include "engine/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "engine/sampling/row_kernels.h"

namespace vkllm::sampling {

namespace {

// Probabilities of the (sorted) candidates renormalised over what is left.
void renormalise(std::vector<Candidate>& c) {
  double sum = 0;
  for (auto& x : c) sum += x.p;
  for (auto& x : c) x.p = static_cast<float>(x.p / sum);
}

// Per engine thread, not per sequence: a 128k row needs a megabyte of scratch, and the samplers
// of one thread run one after the other.
struct Scratch {
  std::vector<float> row;     // penalised logits
  std::vector<float> exps;    // exp(logit - max) over the row
  std::vector<float> scaled;  // logits over the temperature (mirostat)
  std::vector<Candidate> candidates;
};
thread_local Scratch scratch;

// The whole row in descending order, sorted only as far as it is read: tokens are taken in
// bands of logit (within 8, 16, 32 and 64 of the best, then the rest), each band sorted when
// first reached. Language-model rows put nearly all the mass in the first band.
class LazyOrder {
 public:
  LazyOrder(std::span<const float> row, float max, std::vector<Candidate>& out)
      : row_(row), max_(max), out_(out) {
    out_.clear();
  }

  // Whether out[i] exists, taking further bands as needed.
  bool reach(size_t i) {
    while (i >= out_.size()) {
      if (floor_ == -kInf) return false;
      const float lo = band_ < 4 ? max_ - 8.0f * static_cast<float>(1 << band_) : -kInf;
      append_band(row_, lo, floor_, out_);
      floor_ = lo;
      ++band_;
    }
    return true;
  }

 private:
  static constexpr float kInf = std::numeric_limits<float>::infinity();
  std::span<const float> row_;
  float max_;
  std::vector<Candidate>& out_;
  float floor_ = kInf;  // every token at or above it has been taken
  int band_ = 0;
};

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

bool Sampler::penalties_active() const {
  return !recent_counts_.empty() &&
         (params_.repeat_penalty != 1.0f || params_.presence_penalty != 0.0f ||
          params_.frequency_penalty != 0.0f);
}

float Sampler::penalised(float l, int32_t count) const {
  if (params_.repeat_penalty != 1.0f) {
    l = l <= 0 ? l * params_.repeat_penalty : l / params_.repeat_penalty;
  }
  return l - (static_cast<float>(count) * params_.frequency_penalty + params_.presence_penalty);
}

void Sampler::apply_penalties(std::vector<Candidate>& c) const {
  if (!penalties_active()) return;
  // Candidates are indexed by token id here (the full vocabulary, in order).
  for (auto [id, count] : recent_counts_) {
    if (id < 0 || static_cast<size_t>(id) >= c.size()) continue;
    c[id].logit = penalised(c[id].logit, count);
  }
}

std::span<const float> Sampler::penalised_row(std::span<const float> logits) {
  if (!penalties_active()) return logits;
  auto& row = scratch.row;
  row.assign(logits.begin(), logits.end());
  for (auto [id, count] : recent_counts_) {
    if (id < 0 || static_cast<size_t>(id) >= row.size()) continue;
    row[id] = penalised(row[id], count);
  }
  return row;
}

void Sampler::top_k(std::vector<Candidate>& c, int32_t k) {
  if (k <= 0 || static_cast<size_t>(k) >= c.size()) {
    std::sort(c.begin(), c.end(), better);
    return;
  }
  std::partial_sort(c.begin(), c.begin() + k, c.end(), better);
  c.resize(k);
}

void Sampler::softmax(std::vector<Candidate>& c) {
  // Already in order when the logits do not increase: dividing by the temperature can make
  // neighbours equal without making them out of order.
  auto by_logit = [](const Candidate& a, const Candidate& b) { return a.logit > b.logit; };
  if (!std::is_sorted(c.begin(), c.end(), by_logit)) std::sort(c.begin(), c.end(), better);
  const float max = c.front().logit;
  double sum = 0;
  for (auto& x : c) {
    x.p = fast_exp(x.logit - max);
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
  std::sort(kept.begin(), kept.end(), better);
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

// Mirostat over the whole row at the temperature, ordered lazily like sample_whole_row(): v1
// reads the best 100 to estimate the Zipf exponent and keeps its k, v2 keeps the tokens whose
// surprise is at most mu.
int32_t Sampler::sample_mirostat(std::span<const float> row) {
  auto& scaled = scratch.scaled;
  scaled.resize(row.size());
  for (size_t i = 0; i < row.size(); ++i) scaled[i] = row[i] / params_.temperature;
  const float max = row_max(scaled);
  auto& exps = scratch.exps;
  exps.resize(row.size());
  const double sum = exp_row(scaled, 1.0f, max, exps);
  auto& c = scratch.candidates;
  LazyOrder order(scaled, max, c);
  if (!order.reach(0)) return 0;  // a row of NaNs
  auto prob = [&](size_t i) { return c[i].p = static_cast<float>(exps[c[i].id] / sum); };

  size_t keep = 1;
  if (params_.mirostat == 1) {
    const int m = std::min<int>(100, static_cast<int>(row.size()) - 1);
    order.reach(static_cast<size_t>(std::max(m, 0)));
    double sum_ti_bi = 0, sum_ti_sq = 0;
    for (int i = 0; i < m && static_cast<size_t>(i + 1) < c.size(); ++i) {
      double t = std::log(double(i + 2) / double(i + 1));
      double b = std::log(double(prob(i)) / double(prob(i + 1)));
      sum_ti_bi += t * b;
      sum_ti_sq += t * t;
    }
    const double s_hat = sum_ti_sq > 0 ? sum_ti_bi / sum_ti_sq : 1.0;
    const double eps = s_hat - 1.0;
    const double n = static_cast<double>(row.size());
    double k = std::pow((eps * std::pow(2.0, mu_)) / (1.0 - std::pow(n, -eps)), 1.0 / s_hat);
    if (!std::isfinite(k)) k = n;
    keep = std::clamp<size_t>(static_cast<size_t>(std::llround(k)), 1, row.size());
    if (!order.reach(keep - 1)) keep = c.size();
    for (size_t i = 0; i < keep; ++i) prob(i);
  } else {
    prob(0);
    while (order.reach(keep) && -std::log2(prob(keep)) <= mu_) ++keep;
  }
  c.resize(keep);
  renormalise(c);
  int32_t id = draw(c);
  auto it = std::find_if(c.begin(), c.end(), [&](const Candidate& x) { return x.id == id; });
  update_mu(c, id, it->p);
  return id;
}

bool Sampler::sorted_candidates(std::span<const float> row, std::vector<Candidate>& c) const {
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < row.size()) {
    select_top_k(row, static_cast<size_t>(params_.top_k), c);
    return true;
  }
  if (params_.typical_p < 1.0f) {
    // Typical sampling ranks by distance from the entropy, not by logit: it needs every token.
    c.resize(row.size());
    for (size_t i = 0; i < row.size(); ++i) c[i] = {static_cast<int32_t>(i), row[i]};
    std::sort(c.begin(), c.end(), better);
    return true;
  }
  return false;
}

void Sampler::truncate_sorted(std::vector<Candidate>& c) const {
  softmax(c);
  typical(c, params_.typical_p);
  top_p(c, params_.top_p);
  min_p(c, params_.min_p);
  // Temperature last, over the survivors (llama.cpp's order).
  for (auto& x : c) x.logit /= params_.temperature;
  softmax(c);
}

// The same chain as truncate_sorted() on the fully sorted row, with the same arithmetic on every
// probability it reads, but the row is only ordered as far as the nucleus, the min_p survivors
// or the draw reach.
int32_t Sampler::sample_whole_row(std::span<const float> row, std::vector<Candidate>* all) {
  const float max = row_max(row);
  auto& exps = scratch.exps;
  exps.resize(row.size());
  const double sum = exp_row(row, 1.0f, max, exps);
  auto& c = scratch.candidates;
  LazyOrder order(row, max, c);
  if (!order.reach(0)) return 0;  // a row of NaNs
  auto prob = [&](const Candidate& x) { return static_cast<float>(exps[x.id] / sum); };

  bool truncated = false;  // c holds exactly the survivors, with their probabilities
  if (params_.top_p < 1.0f) {
    double cum = 0;
    size_t keep = 0;
    while (order.reach(keep)) {
      c[keep].p = prob(c[keep]);
      cum += c[keep].p;
      ++keep;
      if (cum >= params_.top_p) break;
    }
    c.resize(keep);
    renormalise(c);
    truncated = true;
  }
  if (params_.min_p > 0.0f) {
    if (truncated) {
      min_p(c, params_.min_p);
    } else {
      c[0].p = prob(c[0]);
      const float threshold = c[0].p * params_.min_p;
      size_t keep = 1;
      while (order.reach(keep) && (c[keep].p = prob(c[keep])) >= threshold) ++keep;
      c.resize(keep);
      renormalise(c);
      truncated = true;
    }
  }
  if (truncated) {
    for (auto& x : c) x.logit /= params_.temperature;
    softmax(c);
    if (all) {
      *all = c;
      return -1;
    }
    return draw(c);
  }

  // Nothing truncated: the temperature's softmax needs the whole row's sum, but the draw only
  // walks the order until it lands.
  const double sum_t = exp_row(row, params_.temperature, max / params_.temperature, exps);
  auto prob_t = [&](const Candidate& x) { return static_cast<float>(exps[x.id] / sum_t); };
  if (all) {
    while (order.reach(c.size())) {
    }
    for (auto& x : c) {
      x.logit /= params_.temperature;
      x.p = prob_t(x);
    }
    *all = c;
    return -1;
  }
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double r = u(rng_);
  double cum = 0;
  for (size_t i = 0; order.reach(i); ++i) {
    cum += prob_t(c[i]);
    if (r < cum) return c[i].id;
  }
  return c.back().id;  // rounding left r just above the total
}

int32_t Sampler::sample(std::span<const float> logits) {
  if (logits.empty()) throw std::invalid_argument("sample: empty logits");
  const std::span<const float> row = penalised_row(logits);
  if (greedy()) return row_argmax(row);

  if (params_.mirostat != 0) return sample_mirostat(row);
  auto& c = scratch.candidates;
  if (!sorted_candidates(row, c)) return sample_whole_row(row, nullptr);
  truncate_sorted(c);
  return draw(c);
}

std::vector<Candidate> Sampler::distribution(std::span<const float> logits) {
  if (logits.empty()) throw std::invalid_argument("distribution: empty logits");
  if (params_.mirostat != 0) throw std::invalid_argument("distribution: not for mirostat");
  const std::span<const float> row = penalised_row(logits);
  if (greedy()) {
    const int32_t best = row_argmax(row);
    return {Candidate{best, row[best], 1.0f}};
  }
  std::vector<Candidate> c;
  if (sorted_candidates(row, c)) {
    truncate_sorted(c);
  } else {
    sample_whole_row(row, &c);
  }
  return c;
}

int32_t Sampler::sample_after_draft(std::span<const float> logits, int32_t draft) {
  if (greedy()) return sample(logits);
  std::vector<Candidate> c = distribution(logits);
  const auto it =
      std::find_if(c.begin(), c.end(), [&](const Candidate& x) { return x.id == draft; });
  const double p_draft = it == c.end() ? 0.0 : it->p;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  if (p_draft > 0 && u(rng_) < p_draft) return draft;
  if (it != c.end()) c.erase(it);
  double rest = 0;
  for (const auto& x : c) rest += x.p;
  if (c.empty() || rest <= 0) return draft;  // p(draft) was 1 up to rounding
  for (auto& x : c) x.p = static_cast<float>(x.p / rest);
  return draw(c);
}

}  // namespace vkllm::sampling
