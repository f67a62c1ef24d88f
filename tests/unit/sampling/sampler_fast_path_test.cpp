// The sampler's fast paths (top-k by a heap scan, the whole-row chain over lazily sorted bands,
// the vectorized row kernels) against a plain reference that sorts the whole vocabulary, on
// random logits drawn fresh each run (seed printed on failure).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/sampling/row_kernels.h"
#include "engine/sampling/sampler.h"
#include "tests/support/seeded.h"

namespace vkllm::sampling {
namespace {

using Seeded = test::Seeded<>;

// The textbook chain (llama.cpp's order) over the fully sorted vocabulary. It makes the same
// float/double choices as the sampler (fast_exp, float probabilities, double sums in descending
// order), so cut points agree bit for bit and any difference is the fast path's.
class Reference {
 public:
  explicit Reference(const SamplingParams& p) : p_(p), rng_(static_cast<uint64_t>(p.seed)) {}

  void accept(int32_t t) {
    const int32_t window = p_.repeat_last_n < 0 ? p_.num_ctx : p_.repeat_last_n;
    if (window <= 0) return;
    recent_.push_back(t);
    if (recent_.size() > static_cast<size_t>(window)) recent_.pop_front();
  }

  std::vector<Candidate> distribution(std::vector<float> logits) const {
    std::map<int32_t, int32_t> counts;
    for (int32_t t : recent_) ++counts[t];
    if (p_.repeat_penalty != 1.0f || p_.presence_penalty != 0.0f || p_.frequency_penalty != 0.0f) {
      for (auto [id, n] : counts) {
        float& l = logits[id];
        if (p_.repeat_penalty != 1.0f) l = l <= 0 ? l * p_.repeat_penalty : l / p_.repeat_penalty;
        l -= static_cast<float>(n) * p_.frequency_penalty + p_.presence_penalty;
      }
    }
    std::vector<Candidate> c;
    for (size_t i = 0; i < logits.size(); ++i) c.push_back({static_cast<int32_t>(i), logits[i]});
    std::sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) {
      return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    });
    if (p_.temperature <= 0.0f) return {{c[0].id, c[0].logit, 1.0f}};
    if (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < c.size()) c.resize(p_.top_k);
    softmax(c);
    if (p_.typical_p < 1.0f) typical(c);
    if (p_.top_p < 1.0f) {
      double cum = 0;
      size_t keep = 0;
      while (keep < c.size()) {
        cum += c[keep++].p;
        if (cum >= p_.top_p) break;
      }
      c.resize(keep);
      renormalise(c);
    }
    if (p_.min_p > 0.0f) {
      const float threshold = c[0].p * p_.min_p;
      size_t keep = 1;
      while (keep < c.size() && c[keep].p >= threshold) ++keep;
      c.resize(keep);
      renormalise(c);
    }
    for (auto& x : c) x.logit /= p_.temperature;
    softmax(c);
    return c;
  }

  // Mirostat 1 and 2 as llama.cpp writes them, over the fully sorted row.
  int32_t sample_mirostat(std::vector<float> logits) {
    std::map<int32_t, int32_t> counts;
    for (int32_t t : recent_) ++counts[t];
    for (auto [id, n] : counts) {
      float& l = logits[id];
      l = l <= 0 ? l * p_.repeat_penalty : l / p_.repeat_penalty;
      l -= static_cast<float>(n) * p_.frequency_penalty + p_.presence_penalty;
    }
    std::vector<Candidate> c;
    for (size_t i = 0; i < logits.size(); ++i) {
      c.push_back({static_cast<int32_t>(i), logits[i] / p_.temperature});
    }
    std::sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) {
      return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    });
    softmax(c);
    size_t keep = 1;
    if (p_.mirostat == 1) {
      const size_t m = std::min<size_t>(100, c.size() - 1);
      double sum_ti_bi = 0, sum_ti_sq = 0;
      for (size_t i = 0; i < m; ++i) {
        double t = std::log(double(i + 2) / double(i + 1));
        double b = std::log(double(c[i].p) / double(c[i + 1].p));
        sum_ti_bi += t * b;
        sum_ti_sq += t * t;
      }
      const double s_hat = sum_ti_bi / sum_ti_sq, eps = s_hat - 1.0;
      const double n = static_cast<double>(c.size());
      double k = std::pow((eps * std::pow(2.0, mu_)) / (1.0 - std::pow(n, -eps)), 1.0 / s_hat);
      if (!std::isfinite(k)) k = n;
      keep = std::clamp<size_t>(static_cast<size_t>(std::llround(k)), 1, c.size());
    } else {
      while (keep < c.size() && -std::log2(c[keep].p) <= mu_) ++keep;
    }
    c.resize(keep);
    renormalise(c);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const double r = u(rng_);
    double cum = 0;
    const Candidate* chosen = &c.back();
    for (const auto& x : c) {
      cum += x.p;
      if (r < cum) {
        chosen = &x;
        break;
      }
    }
    mu_ -= p_.mirostat_eta * (-std::log2(chosen->p) - p_.mirostat_tau);
    return chosen->id;
  }
  float mu() const { return mu_; }

  int32_t sample(const std::vector<float>& logits) {
    auto c = distribution(logits);
    if (p_.temperature <= 0.0f) return c[0].id;
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const double r = u(rng_);
    double cum = 0;
    for (const auto& x : c) {
      cum += x.p;
      if (r < cum) return x.id;
    }
    return c.back().id;
  }

 private:
  static void softmax(std::vector<Candidate>& c) {
    double sum = 0;
    for (auto& x : c) sum += x.p = fast_exp(x.logit - c[0].logit);
    for (auto& x : c) x.p = static_cast<float>(x.p / sum);
  }
  static void renormalise(std::vector<Candidate>& c) {
    double sum = 0;
    for (auto& x : c) sum += x.p;
    for (auto& x : c) x.p = static_cast<float>(x.p / sum);
  }
  // Keep the tokens whose surprise is nearest the entropy until their mass passes typical_p.
  void typical(std::vector<Candidate>& c) const {
    double entropy = 0;
    for (auto& x : c) {
      if (x.p > 0) entropy -= x.p * std::log(x.p);
    }
    std::vector<std::pair<double, size_t>> by_distance;
    for (size_t i = 0; i < c.size(); ++i) {
      by_distance.push_back({std::abs(-std::log(c[i].p) - entropy), i});
    }
    std::stable_sort(by_distance.begin(), by_distance.end(),
                     [](auto& a, auto& b) { return a.first < b.first; });
    std::vector<Candidate> kept;
    double cum = 0;
    for (auto& [d, i] : by_distance) {
      kept.push_back(c[i]);
      cum += c[i].p;
      if (cum > p_.typical_p) break;
    }
    std::sort(kept.begin(), kept.end(), [](const Candidate& a, const Candidate& b) {
      return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    });
    c = kept;
    renormalise(c);
  }

  SamplingParams p_;
  std::mt19937_64 rng_;
  std::deque<int32_t> recent_;
  float mu_ = 2.0f * p_.mirostat_tau;
};

enum class Shape { kPeaked, kFlat, kTiesAndMasked };

// Rows like a model's (a few clear candidates over a normal background), flat rows (huge
// nuclei), and rows with many equal logits and -inf (masked) tokens.
std::vector<float> make_logits(std::mt19937& rng, size_t n, Shape shape) {
  std::normal_distribution<float> background(0.0f, shape == Shape::kFlat ? 3.0f : 1.5f);
  std::uniform_int_distribution<size_t> id(0, n - 1);
  std::vector<float> v(n);
  for (auto& x : v) x = background(rng);
  if (shape == Shape::kPeaked) {
    for (int i = 0; i < 12; ++i) v[id(rng)] = 9.0f + background(rng);
  }
  if (shape == Shape::kTiesAndMasked) {
    for (auto& x : v) x = std::round(x * 2.0f) / 2.0f;  // a few dozen distinct values
    for (size_t i = 0; i < n / 4; ++i) v[id(rng)] = -std::numeric_limits<float>::infinity();
  }
  return v;
}

SamplingParams params(int32_t top_k, float top_p, float min_p, float typical, float temperature) {
  SamplingParams p;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  p.typical_p = typical;
  p.temperature = temperature;
  return p;
}

// The fast distribution equals the reference's: the same tokens in the same order, the same
// probabilities (to float rounding of the vocabulary sum, which the two add in different
// orders); and the same seed draws the same tokens.
void compare(const SamplingParams& base, size_t n, Shape shape, std::mt19937& rng, int draws) {
  SamplingParams p = base;
  p.seed = static_cast<int64_t>(rng());
  Sampler fast(p);
  Reference ref(p);
  std::uniform_int_distribution<int32_t> common(0, 40);  // repeated tokens: counts above 1
  for (int i = 0; i < 80; ++i) {
    int32_t t = common(rng) * static_cast<int32_t>(n / 41);
    fast.accept(t);
    ref.accept(t);
  }
  auto logits = make_logits(rng, n, shape);
  auto got = fast.distribution(logits);
  auto want = ref.distribution(logits);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].id, want[i].id)
        << "rank " << i << " logits " << got[i].logit << " " << want[i].logit << " p " << got[i].p
        << " " << want[i].p << " prev " << got[i - 1].logit << " " << want[i - 1].logit;
    ASSERT_NEAR(got[i].p, want[i].p, 1e-6 * want[i].p + 1e-12) << "rank " << i;
  }
  for (int i = 0; i < draws; ++i) {
    int32_t a = fast.sample(logits), b = ref.sample(logits);
    ASSERT_EQ(a, b) << "draw " << i;
    fast.accept(a);
    ref.accept(b);
  }
}

struct Case {
  const char* name;
  SamplingParams params;
};

std::vector<Case> cases() {
  SamplingParams penalties = params(0, 0.9f, 0.0f, 1.0f, 0.8f);
  penalties.repeat_penalty = 1.3f;
  penalties.presence_penalty = 0.5f;
  penalties.frequency_penalty = 0.3f;
  SamplingParams penalties_top_k = penalties;
  penalties_top_k.top_k = 50;
  return {
      {"defaults", SamplingParams{}},
      {"top_k 0", params(0, 0.9f, 0.0f, 1.0f, 0.8f)},
      {"top_k 0, top_p 0.95, temperature 1.5", params(0, 0.95f, 0.0f, 1.0f, 1.5f)},
      {"top_k 0, min_p 0.05", params(0, 1.0f, 0.05f, 1.0f, 0.8f)},
      {"top_k 0, top_p 0.95, min_p 0.02", params(0, 0.95f, 0.02f, 1.0f, 1.2f)},
      {"no truncation", params(0, 1.0f, 0.0f, 1.0f, 1.0f)},
      {"top_k 200, top_p 0.8", params(200, 0.8f, 0.0f, 1.0f, 0.7f)},
      {"typical 0.9", params(0, 1.0f, 0.0f, 0.9f, 1.0f)},
      {"top_k 100, typical 0.7", params(100, 0.95f, 0.0f, 0.7f, 0.9f)},
      {"penalties", penalties},
      {"penalties, top_k 50", penalties_top_k},
      {"greedy with penalties", params(40, 0.9f, 0.0f, 1.0f, 0.0f)},
  };
}

TEST(SamplerFastPath, MatchesTheFullSortReference) {
  Seeded r;
  SCOPED_TRACE(r.trace());
  for (const auto& c : cases()) {
    for (Shape shape : {Shape::kPeaked, Shape::kFlat, Shape::kTiesAndMasked}) {
      for (size_t n : {size_t{1000}, size_t{32000}}) {
        SCOPED_TRACE(std::string(c.name) + ", vocab " + std::to_string(n) + ", shape " +
                     std::to_string(static_cast<int>(shape)));
        compare(c.params, n, shape, r.rng, n <= 1000 ? 16 : 4);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(SamplerFastPath, MatchesTheFullSortReferenceAtLlama3Vocabulary) {
  Seeded r;
  SCOPED_TRACE(r.trace());
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    compare(c.params, 128256, Shape::kPeaked, r.rng, 3);
    if (HasFatalFailure()) return;
  }
}

TEST(SamplerFastPath, TopKAtOrAboveTheVocabularyIsTheWholeRow) {
  Seeded r;
  SCOPED_TRACE(r.trace());
  compare(params(5000, 0.9f, 0.0f, 1.0f, 0.8f), 5000, Shape::kPeaked, r.rng, 10);
  compare(params(9999, 0.9f, 0.0f, 1.0f, 0.8f), 5000, Shape::kFlat, r.rng, 10);
}

TEST(SamplerFastPath, MirostatMatchesTheFullSortReference) {
  Seeded r;
  SCOPED_TRACE(r.trace());
  for (int version : {1, 2}) {
    for (size_t n : {size_t{1000}, size_t{32000}}) {
      for (Shape shape : {Shape::kPeaked, Shape::kFlat}) {
        SCOPED_TRACE("mirostat " + std::to_string(version) + ", vocab " + std::to_string(n));
        SamplingParams p = params(40, 0.9f, 0.0f, 1.0f, 0.9f);
        p.mirostat = version;
        p.mirostat_tau = shape == Shape::kFlat ? 8.0f : 3.0f;
        p.seed = static_cast<int64_t>(r.rng());
        Sampler fast(p);
        Reference ref(p);
        auto logits = make_logits(r.rng, n, shape);
        for (int i = 0; i < 12; ++i) {
          int32_t a = fast.sample(logits), b = ref.sample_mirostat(logits);
          ASSERT_EQ(a, b) << "draw " << i;
          ASSERT_NEAR(fast.mirostat_mu(), ref.mu(), 1e-5) << "draw " << i;
          fast.accept(a);
          ref.accept(b);
        }
      }
    }
  }
}

TEST(RowKernels, FastExpIsWithinAnUlpOfExp) {
  Seeded r;
  SCOPED_TRACE(r.trace());
  std::uniform_real_distribution<float> x(-87.0f, 88.0f);
  for (int i = 0; i < 200000; ++i) {
    const float v = x(r.rng);
    const double want = std::exp(static_cast<double>(v));
    ASSERT_LE(std::abs(fast_exp(v) - want), 1.2e-7 * want) << v;
  }
  EXPECT_EQ(fast_exp(0.0f), 1.0f);
  EXPECT_EQ(fast_exp(-87.5f), 0.0f);
  EXPECT_EQ(fast_exp(-std::numeric_limits<float>::infinity()), 0.0f);
}

TEST(RowKernels, ArgmaxTopKAndBandsAgreeWithSorting) {
  Seeded r;
  SCOPED_TRACE(r.trace());
  for (size_t n : {size_t{1}, size_t{15}, size_t{17}, size_t{1000}, size_t{32003}}) {
    for (Shape shape : {Shape::kPeaked, Shape::kTiesAndMasked}) {
      auto row = make_logits(r.rng, std::max<size_t>(n, 2), shape);
      row.resize(n);
      std::vector<Candidate> all;
      for (size_t i = 0; i < n; ++i) all.push_back({static_cast<int32_t>(i), row[i]});
      std::sort(all.begin(), all.end(), better);
      EXPECT_EQ(row_argmax(row), all[0].id) << n;
      EXPECT_EQ(row_max(row), all[0].logit) << n;
      for (size_t k : {size_t{1}, size_t{7}, size_t{40}, size_t{999}}) {
        if (k >= n) continue;
        std::vector<Candidate> top;
        select_top_k(row, k, top);
        ASSERT_EQ(top.size(), k);
        for (size_t i = 0; i < k; ++i) EXPECT_EQ(top[i].id, all[i].id) << n << " " << k;
      }
      // Bands [0.5, inf) then [-2, 0.5) then the rest continue the sorted order.
      const float inf = std::numeric_limits<float>::infinity();
      std::vector<Candidate> bands;
      append_band(row, 0.5f, inf, bands);
      append_band(row, -2.0f, 0.5f, bands);
      append_band(row, -inf, -2.0f, bands);
      ASSERT_EQ(bands.size(), n);
      for (size_t i = 0; i < n; ++i) EXPECT_EQ(bands[i].id, all[i].id);
      std::vector<float> exps(n);
      double sum = exp_row(row, 1.5f, all[0].logit / 1.5f, exps);
      double want = 0;
      for (size_t i = 0; i < n; ++i) {
        EXPECT_EQ(exps[i], fast_exp(row[i] / 1.5f - all[0].logit / 1.5f));
        want += exps[i];
      }
      EXPECT_NEAR(sum, want, 1e-12 * want);
    }
  }
}

}  // namespace
}  // namespace vkllm::sampling
