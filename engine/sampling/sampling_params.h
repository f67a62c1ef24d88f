// The sampling options of Ollama's `options` object, with Ollama's defaults.
#pragma once

#include <cstdint>

namespace vkllm::sampling {

struct SamplingParams {
  float temperature = 0.8f;    // <= 0: greedy
  int32_t top_k = 40;          // <= 0: disabled
  float top_p = 0.9f;          // >= 1: disabled
  float min_p = 0.0f;          // <= 0: disabled
  float typical_p = 1.0f;      // >= 1: disabled
  int32_t repeat_last_n = 64;  // 0: no penalties, -1: the whole context
  float repeat_penalty = 1.1f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  int32_t mirostat = 0;  // 0 off, 1 or 2
  float mirostat_tau = 5.0f;
  float mirostat_eta = 0.1f;
  int64_t seed = -1;  // < 0: a random seed
  // Context size, for repeat_last_n == -1.
  int32_t num_ctx = 2048;
};

}  // namespace vkllm::sampling
