#include "engine/cpu/short_conv.h"

#include <stdexcept>

#include "engine/model/model_spec.h"

namespace vkllm::cpu {

void short_conv(const ShortConvRows& r, const float* w, float* state, uint32_t n_embd,
                uint32_t l_cache, uint32_t n_tokens, bool fresh, uint32_t begin, uint32_t end) {
  constexpr uint32_t kMax = model::kMaxShortConvLength;
  if (l_cache < 2 || l_cache > kMax) throw std::invalid_argument("short_conv: kernel length");
  const uint32_t d = l_cache - 1;  // the state's length
  for (uint32_t c = begin; c < end; ++c) {
    // The sliding window of the last d inputs, oldest first, then the current one.
    float win[kMax];
    for (uint32_t k = 0; k < d; ++k) win[k] = fresh ? 0.0f : state[uint64_t(k) * n_embd + c];
    const float* taps = w + uint64_t(c) * l_cache;
    for (uint32_t t = 0; t < n_tokens; ++t) {
      const float* row = r.bcx + uint64_t(t) * r.bcx_stride;
      win[d] = row[c] * row[2 * n_embd + c];  // B * X
      float sum = 0.0f;
      for (uint32_t k = 0; k < l_cache; ++k) sum += win[k] * taps[k];
      r.out[uint64_t(t) * r.out_stride + c] = row[n_embd + c] * sum;  // C * conv
      for (uint32_t k = 0; k < d; ++k) win[k] = win[k + 1];
    }
    for (uint32_t k = 0; k < d; ++k) state[uint64_t(k) * n_embd + c] = win[k];
  }
}

}  // namespace vkllm::cpu
