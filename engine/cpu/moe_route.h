// Mixture-of-experts routing of one token (softmax_after_top_k: see below): softmax over its
// router logits, the n_used most
// probable experts (ties: the lower expert index first, as ggml's top-k MoE kernels break them;
// its CPU argsort keeps that order too on rows of up to 16 experts), and their probabilities as
// the experts' weights, renormalised to sum 1 when asked (the sum clamped below at 2^-14 as
// llama.cpp does). shaders/moe_route.comp computes the same on the device.
#pragma once

#include <cstdint>

namespace vkllm::cpu {

struct MoeRouteArgs {
  const float* logits = nullptr;  // n_expert per token, rows packed
  uint32_t n_expert = 0;
  uint32_t n_used = 0;
  bool norm_weights = true;
  uint32_t* ids = nullptr;   // n_used per token, in rank order
  float* weights = nullptr;  // n_used per token
  // gpt-oss: the k largest logits (same tie rule), their weights a softmax over those k.
  bool softmax_after_top_k = false;
  // Llama 4: the k largest logits, each weighted by its sigmoid (norm_weights false).
  bool sigmoid = false;
  // DeepSeek V3 / Nemotron-H MoE: scores sigmoid(logit), the k best of score + select_bias[e]
  // (n_expert values; null: none) chosen (same tie rule), weighted by their unbiased scores.
  bool sigmoid_scores = false;
  const float* select_bias = nullptr;
};

// Unit: a token. Throws std::invalid_argument for n_used 0 or above n_expert.
void moe_route(const MoeRouteArgs& a, uint32_t token_begin, uint32_t token_end);

}  // namespace vkllm::cpu
