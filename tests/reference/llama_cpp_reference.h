// llama.cpp's recorded outputs for the shared test models (../shared/testdata/reference), and
// the comparison rules its README gives.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace vkllm::reference {

// Greedy tokens are compared only up to the first step whose top-2 margin is below this.
inline constexpr float kNearTieMargin = 0.01f;

struct LlamaCppCase;
// The margin below which a greedy step counts as a near-tie. kNearTieMargin for float weights;
// for quantized weights llama.cpp rounds activations to 8 bits inside its matrix products,
// which moves logits by up to about the measured max-abs difference of the last logits
// (observed: 0.17-0.5 on the shared Q8_0/Q4_K_M models, vs 0.01-0.02 for F16), so a step whose
// margin is below twice that difference is a near-tie too.
float near_tie_margin(const LlamaCppCase& c, double last_logits_max_abs_diff);

struct LlamaCppCase {
  std::string name;  // "<model>.<prompt>", e.g. "ref-llama-f16.fox"
  std::filesystem::path model_path;
  std::string prompt_text;
  std::vector<int32_t> prompt_tokens;
  std::vector<int32_t> greedy_tokens;
  std::vector<float> greedy_margins;
  std::vector<float> last_logits;
  double min_cosine;  // 0.9999 for float weights, 0.999 for quantized
  bool quantized = false;
};

std::filesystem::path shared_testdata_dir();
// Every reference case whose model file is present.
std::vector<std::string> llama_cpp_case_names();
LlamaCppCase load_llama_cpp_case(const std::string& name);

double cosine(std::span<const float> a, std::span<const float> b);
double max_abs_diff(std::span<const float> a, std::span<const float> b);

}  // namespace vkllm::reference
