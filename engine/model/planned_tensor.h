// The random-weight makers' tensor plans (model_maker.cpp, encoder_maker.cpp): a tensor's name,
// shape and how its values are drawn, generated lazily when the GGUF writer streams it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_maker.h"

namespace vkllm::model {

// Logit: values of order one (gpt-oss's attention sinks and router bias, which must matter).
enum class Init { Matrix, Norm, Bias, Logit, RopeFactors };

struct PlannedTensor {
  std::string name;
  std::vector<uint64_t> shape;
  Init init;
  uint32_t layer;
  float scale = 1.0f;  // multiplies the generated values
};

// Adds the plan's tensors to `w` as lazy tensors of the types the file type's quantization mix
// gives them (BERT's position and token-type embeddings and Mamba-2's conv kernel stay F32, as
// llama.cpp needs them), each generated from (name, seed) so the bytes never depend on threads.
void add_planned_tensors(std::vector<PlannedTensor> plan, const MakeModelOptions& o,
                         bool has_output, gguf::GgufWriter& w);

}  // namespace vkllm::model
