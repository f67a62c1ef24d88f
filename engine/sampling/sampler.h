// A per-sequence sampler: turns a logit vector into the next token with the llama.cpp chain that
// Ollama uses (penalties, top-k, typical, top-p, min-p, temperature, then a draw; or penalties,
// temperature and mirostat 1/2). Owns its random engine, so the same seed and the same logits
// give the same tokens.
//
// Candidates are ordered by logit, the lower id first among equals. Over a whole vocabulary
// (top_k 0, mirostat) the chain never sorts it: the nucleus, the min_p or mirostat survivors or
// the draw's landing point are found by sorting bands of the best logits as far as needed.
#pragma once

#include <cstdint>
#include <deque>
#include <random>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/sampling/sampling_params.h"

namespace vkllm::sampling {

struct Candidate {
  int32_t id;
  float logit;
  float p = 0.0f;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);

  // Chooses the next token. `logits` covers the whole vocabulary and is not modified.
  int32_t sample(std::span<const float> logits);
  // What the next sample() draws from: the surviving candidates in descending order with their
  // final probabilities (penalties, truncation, temperature). For tests and diagnostics; sample()
  // itself only orders as much of the vocabulary as the draw needs. Not for mirostat.
  std::vector<Candidate> distribution(std::span<const float> logits);
  // Speculative decoding's acceptance rule for a token proposed by a deterministic draft (its
  // distribution q is one-hot): keeps `draft` with probability p(draft) under the distribution
  // sample() draws from, else draws from the residual max(p - q, 0) renormalised (p without the
  // draft), so the token returned is distributed exactly as sample()'s. Greedy: sample()'s
  // token. Not for mirostat (its state follows every draw).
  int32_t sample_after_draft(std::span<const float> logits, int32_t draft);
  // Records a token of the sequence (prompt or generated) for the repetition penalties.
  void accept(int32_t token);

  bool greedy() const { return params_.temperature <= 0.0f; }
  const SamplingParams& params() const { return params_; }
  float mirostat_mu() const { return mu_; }

  // The steps of the chain, public so tests can check each against a reference.
  void apply_penalties(std::vector<Candidate>& c) const;
  static void top_k(std::vector<Candidate>& c, int32_t k);  // leaves c sorted by logit, desc
  static void softmax(std::vector<Candidate>& c);           // sorts desc, fills p
  static void top_p(std::vector<Candidate>& c, float p);    // needs softmax; renormalises
  static void min_p(std::vector<Candidate>& c, float p);
  static void typical(std::vector<Candidate>& c, float p);

 private:
  bool penalties_active() const;
  float penalised(float logit, int32_t count) const;
  // The logits with the repetition penalties applied (a scratch copy when any apply).
  std::span<const float> penalised_row(std::span<const float> logits);
  // The candidates the chain starts from, sorted: the top k, or every token when typical needs
  // them; false when the whole row is walked lazily instead (sample_whole_row).
  bool sorted_candidates(std::span<const float> row, std::vector<Candidate>& c) const;
  // The chain from softmax to temperature over candidates sorted by logit.
  void truncate_sorted(std::vector<Candidate>& c) const;
  // top_k off and no typical: the chain over the whole row without sorting it. Draws a token,
  // or with `all` fills it with the whole distribution instead.
  int32_t sample_whole_row(std::span<const float> row, std::vector<Candidate>* all);
  int32_t draw(std::vector<Candidate>& c);  // from softmax probabilities
  int32_t sample_mirostat(std::span<const float> row);
  void update_mu(const std::vector<Candidate>& c, int32_t chosen, float p_chosen);

  SamplingParams params_;
  std::mt19937_64 rng_;
  size_t penalty_window_;
  std::deque<int32_t> recent_;  // last penalty_window_ accepted tokens
  std::unordered_map<int32_t, int32_t> recent_counts_;
  float mu_;
};

}  // namespace vkllm::sampling
