#include "engine/sampling/sampler.h"
#include "tests/support/seeded.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace vkllm::sampling {
namespace {

using Seeded = test::Seeded<>;

std::vector<float> random_logits(std::mt19937& rng, size_t n, float scale = 3.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

std::vector<double> reference_softmax(const std::vector<float>& logits, float temperature = 1) {
  double max = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(logits.size());
  double sum = 0;
  for (size_t i = 0; i < p.size(); ++i) sum += p[i] = std::exp((logits[i] - max) / temperature);
  for (auto& x : p) x /= sum;
  return p;
}

SamplingParams plain(float temperature) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.repeat_penalty = 1.0f;
  return p;
}

std::map<int32_t, int> histogram(Sampler& s, const std::vector<float>& logits, int draws) {
  std::map<int32_t, int> h;
  for (int i = 0; i < draws; ++i) ++h[s.sample(logits)];
  return h;
}

TEST(Sampler, ZeroTemperatureIsArgmax) {
  Seeded r;
  SCOPED_TRACE(r.trace());
  auto logits = random_logits(r.rng, 1000);
  Sampler s(plain(0.0f));
  int32_t best = std::max_element(logits.begin(), logits.end()) - logits.begin();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(s.sample(logits), best);
}

TEST(Sampler, DrawsFollowTheTemperedSoftmax) {
  Seeded r;
  SCOPED_TRACE(r.trace());
  auto logits = random_logits(r.rng, 8, 1.0f);
  for (float t : {0.5f, 1.0f, 1.7f}) {
    auto p = plain(t);
    p.seed = r.rng();
    Sampler s(p);
    const int draws = 40000;
    auto h = histogram(s, logits, draws);
    auto want = reference_softmax(logits, t);
    for (size_t i = 0; i < want.size(); ++i) {
      double got = h[i] / double(draws);
      // 5 standard deviations of a binomial proportion, plus a little slack.
      double tol = 5 * std::sqrt(want[i] * (1 - want[i]) / draws) + 1e-3;
      EXPECT_NEAR(got, want[i], tol) << "token " << i << " temperature " << t;
    }
  }
}

TEST(Sampler, TopKOnlyEverPicksTheKBest) {
  Seeded r;
  SCOPED_TRACE(r.trace());
  auto logits = random_logits(r.rng, 200, 0.3f);
  auto p = plain(1.5f);
  p.top_k = 3;
  Sampler s(p);
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  std::set<int32_t> allowed(order.begin(), order.begin() + 3);
  auto h = histogram(s, logits, 3000);
  for (auto [id, n] : h) EXPECT_TRUE(allowed.count(id)) << id;
  EXPECT_EQ(h.size(), 3u) << "all three should appear with flat logits";
}

TEST(Sampler, TopPKeepsTheSmallestNucleus) {
  Seeded r;
  SCOPED_TRACE(r.trace());
  auto logits = random_logits(r.rng, 50, 2.0f);
  auto probs = reference_softmax(logits);
  for (float top_p : {0.3f, 0.75f, 0.95f}) {
    std::vector<Candidate> c;
    for (size_t i = 0; i < logits.size(); ++i) c.push_back({int32_t(i), logits[i]});
    Sampler::softmax(c);
    Sampler::top_p(c, top_p);
    // Reference: walk probabilities in descending order until the mass reaches top_p.
    auto sorted = probs;
    std::sort(sorted.rbegin(), sorted.rend());
    size_t n = 0;
    double cum = 0;
    while (cum < top_p) cum += sorted[n++];
    EXPECT_EQ(c.size(), n) << "top_p " << top_p;
    double total = 0;
    for (auto& x : c) total += x.p;
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
}

TEST(Sampler, MinPDropsTokensBelowTheScaledMaximum) {
  Seeded r;
  SCOPED_TRACE(r.trace());
  auto logits = random_logits(r.rng, 100, 2.0f);
  auto probs = reference_softmax(logits);
  double pmax = *std::max_element(probs.begin(), probs.end());
  std::vector<Candidate> c;
  for (size_t i = 0; i < logits.size(); ++i) c.push_back({int32_t(i), logits[i]});
  Sampler::softmax(c);
  Sampler::min_p(c, 0.1f);
  size_t want =
      std::count_if(probs.begin(), probs.end(), [&](double p) { return p >= 0.1 * pmax; });
  EXPECT_EQ(c.size(), want);
}

TEST(Sampler, TypicalKeepsTokensNearestTheEntropy) {
  // Hand-checked case: p = {0.5, 0.25, 0.125, 0.125}; entropy = 1.75 bits = 1.213 nats.
  // Surprises (nats): 0.693, 1.386, 2.079, 2.079 -> distances 0.520, 0.173, 0.866, 0.866.
  // Order by distance: token 1 (0.25), token 0 (0.5 -> cum 0.75 > 0.6): keep {0, 1}.
  std::vector<Candidate> c;
  for (double p : {0.5, 0.25, 0.125, 0.125}) c.push_back({int32_t(c.size()), float(std::log(p))});
  Sampler::softmax(c);
  Sampler::typical(c, 0.6f);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].id, 0);
  EXPECT_EQ(c[1].id, 1);
  EXPECT_NEAR(c[0].p, 2.0 / 3.0, 1e-6);
}

TEST(Sampler, RepeatPresenceAndFrequencyPenalties) {
  SamplingParams p = plain(0.0f);
  p.repeat_penalty = 2.0f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  p.repeat_last_n = 3;
  Sampler s(p);
  for (int32_t t : {7, 1, 2, 2}) s.accept(t);  // window keeps 1, 2, 2
  std::vector<Candidate> c;
  std::vector<float> logits = {1.0f, 4.0f, -1.0f, 3.0f};
  for (size_t i = 0; i < logits.size(); ++i) c.push_back({int32_t(i), logits[i]});
  s.apply_penalties(c);
  EXPECT_FLOAT_EQ(c[0].logit, 1.0f);
  EXPECT_FLOAT_EQ(c[1].logit, 4.0f / 2 - 0.25f - 0.5f);
  EXPECT_FLOAT_EQ(c[2].logit, -1.0f * 2 - 2 * 0.25f - 0.5f);
  EXPECT_FLOAT_EQ(c[3].logit, 3.0f);
  // Token 1 would win without penalties; with them token 3 does.
  EXPECT_EQ(s.sample(logits), 3);
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferentTokens) {
  Seeded r;
  SCOPED_TRACE(r.trace());
  auto logits = random_logits(r.rng, 500, 1.0f);
  SamplingParams p;  // Ollama's defaults
  p.seed = 42;
  auto run = [&](int64_t seed) {
    p.seed = seed;
    Sampler s(p);
    std::vector<int32_t> out;
    for (int i = 0; i < 64; ++i) {
      out.push_back(s.sample(logits));
      s.accept(out.back());
    }
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

TEST(Sampler, MirostatSurpriseFollowsTau) {
  Seeded r;
  SCOPED_TRACE(r.trace());
  auto logits = random_logits(r.rng, 2000, 2.5f);
  auto probs = reference_softmax(logits);
  double entropy_bits = 0;
  for (double q : probs) entropy_bits -= q * std::log2(q);
  for (int version : {1, 2}) {
    // Mean surprise (under the full distribution) of what mirostat picks once mu has settled.
    auto mean_surprise = [&](float tau) {
      SamplingParams p = plain(1.0f);
      p.mirostat = version;
      p.mirostat_tau = tau;
      p.mirostat_eta = 0.1f;
      p.seed = r.rng();
      Sampler s(p);
      double sum = 0;
      const int n = 2000;
      for (int i = 0; i < n; ++i) {
        int32_t t = s.sample(logits);
        if (i >= n / 2) sum += -std::log2(probs[t]);
      }
      EXPECT_TRUE(std::isfinite(s.mirostat_mu()));
      return sum / (n / 2);
    };
    double low = mean_surprise(1.5f), high = mean_surprise(4.0f);
    EXPECT_LT(low, high) << "mirostat " << version;
    EXPECT_LT(low, entropy_bits) << "a low target must truncate below plain sampling";
    EXPECT_GT(high, 1.5) << "mirostat " << version;
  }
}

TEST(Sampler, RejectsBadMirostatVersion) {
  SamplingParams p;
  p.mirostat = 3;
  EXPECT_THROW(Sampler{p}, std::invalid_argument);
}

}  // namespace
}  // namespace vkllm::sampling
