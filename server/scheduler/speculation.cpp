#include "server/scheduler/speculation.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace vkllm::sched {

namespace {

// The estimate moves this far toward each step's acceptance ratio.
constexpr double kAcceptanceWeight = 0.3;
// Below this estimate a verification step is mostly wasted work: pause drafting for
// kPauseSteps decode steps, then probe again from kProbeAcceptance.
constexpr double kMinAcceptance = 0.15;
constexpr uint32_t kPauseSteps = 32;
constexpr double kProbeAcceptance = 0.3;

}  // namespace

SpeculationMode parse_speculation_mode(std::string_view text) {
  if (text == "ngram") return SpeculationMode::ngram;
  if (text == "off") return SpeculationMode::off;
  if (text == "auto") return SpeculationMode::automatic;
  throw std::invalid_argument("unknown speculation mode '" + std::string(text) +
                              "' (expected auto, ngram or off)");
}

SpeculationOptions speculation_for(SpeculationOptions options, bool model_on_cpu,
                                   bool has_draft_model) {
  if (options.mode != SpeculationMode::off && has_draft_model) {
    options.mode = SpeculationMode::draft;
  } else if (options.mode == SpeculationMode::automatic)
    options.mode = model_on_cpu ? SpeculationMode::ngram : SpeculationMode::off;
  return options;
}

std::vector<int32_t> ngram_draft(std::span<const int32_t> context, uint32_t max_tokens,
                                 uint32_t n_max, uint32_t n_min) {
  const size_t len = context.size();
  if (max_tokens == 0 || n_min == 0) return {};
  for (auto n = static_cast<uint32_t>(std::min<size_t>(n_max, len > 0 ? len - 1 : 0)); n >= n_min;
       --n) {
    const auto suffix = context.last(n);
    // The most recent earlier occurrence: its continuation is the likeliest to repeat. A match
    // must end before the context does, so at least one token follows it.
    for (size_t start = len - n; start-- > 0;) {
      if (!std::equal(suffix.begin(), suffix.end(), context.begin() + start)) continue;
      const size_t from = start + n;
      const size_t count = std::min<size_t>(max_tokens, len - from);
      return {context.begin() + from, context.begin() + from + count};
    }
  }
  return {};
}

uint32_t DraftGate::budget(uint32_t max_tokens) {
  if (paused_ > 0) {
    --paused_;
    return 0;
  }
  // Long drafts only while most of them are kept: each rejected token is a wasted row.
  const double share = std::min(1.0, acceptance_ * 1.5);
  return std::clamp<uint32_t>(static_cast<uint32_t>(std::ceil(max_tokens * share)), 1,
                              std::max<uint32_t>(max_tokens, 1));
}

void DraftGate::record(uint32_t drafted, uint32_t accepted) {
  if (drafted == 0) return;
  acceptance_ += kAcceptanceWeight * (double(accepted) / drafted - acceptance_);
  if (acceptance_ < kMinAcceptance) {
    paused_ = kPauseSteps;
    acceptance_ = kProbeAcceptance;
  }
}

Verified verify_greedy(std::span<const int32_t> draft, std::span<const int32_t> row_argmax) {
  if (row_argmax.size() != draft.size() + 1) {
    throw std::invalid_argument("verify_greedy: one row per draft token and one more expected");
  }
  Verified v;
  for (size_t j = 0; j <= draft.size(); ++j) {
    v.tokens.push_back(row_argmax[j]);
    if (j == draft.size() || row_argmax[j] != draft[j]) break;
    ++v.accepted;
  }
  return v;
}

Verified verify_sampled(sampling::Sampler& sampler, std::span<const int32_t> draft,
                        std::span<const float> rows, uint32_t n_vocab) {
  if (rows.size() != (draft.size() + 1) * size_t{n_vocab}) {
    throw std::invalid_argument("verify_sampled: one row per draft token and one more expected");
  }
  Verified v;
  for (size_t j = 0; j <= draft.size(); ++j) {
    const auto row = rows.subspan(j * n_vocab, n_vocab);
    const int32_t tok =
        j < draft.size() ? sampler.sample_after_draft(row, draft[j]) : sampler.sample(row);
    sampler.accept(tok);
    v.tokens.push_back(tok);
    if (j == draft.size() || tok != draft[j]) break;
    ++v.accepted;
  }
  return v;
}

}  // namespace vkllm::sched
