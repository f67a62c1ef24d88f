// Passes over a whole logit row (up to 128k+ floats) that the sampler makes per token, written so
// the compiler vectorizes them: most of the row is skipped a block at a time once a threshold is
// known, so choosing among a large vocabulary costs a few passes instead of a sort.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/sampling/sampler.h"

namespace vkllm::sampling {

// The order every sampler step uses: higher logit first, the lower id first among equals.
inline bool better(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// exp(x) for -87 <= x <= 88 within 1 ulp of the exact value (relative error < 1.2e-7); 0 below
// -87 (where std::exp gives denormals) and for -inf. Vectorizable, unlike the libm call. Every
// softmax of the sampler uses it, so the lazy whole-row path and the sorted path agree exactly.
float fast_exp(float x);

float row_max(std::span<const float> row);
// First index of the largest value.
int32_t row_argmax(std::span<const float> row);
// out[i] = fast_exp(row[i] / divisor - shift); returns the sum of out in double.
double exp_row(std::span<const float> row, float divisor, float shift, std::span<float> out);
// The k best of the row (k < row.size()), sorted by better().
void select_top_k(std::span<const float> row, size_t k, std::vector<Candidate>& out);
// Appends the tokens with lo <= logit < hi, sorted by better().
void append_band(std::span<const float> row, float lo, float hi, std::vector<Candidate>& out);

}  // namespace vkllm::sampling
