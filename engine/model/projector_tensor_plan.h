// The random projector makers' tensor plans (projector_maker.cpp, gemma4v_projector_maker.cpp):
// each tensor's name, shape and how its values are drawn, written lazily in the types llama.cpp's
// converter gives an f16 mmproj.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/model/projector_maker.h"

namespace vkllm::model {

// How a random tensor is drawn: a matrix's N(0, 1/fan_in), a norm's 1 + N(0, 0.05), a bias's
// N(0, 0.02), or every element `value` (Constant: Gemma 4's clamp bounds). fan_in is passed
// explicitly because the patch kernel's is 3 x patch^2, not its row.
enum class ProjectorInit { Matrix, Norm, Bias, Constant };

struct ProjectorTensor {
  std::string name;
  std::vector<uint64_t> shape;
  ProjectorInit init;
  uint64_t fan_in = 0;
  float value = 0.0f;  // Constant's
};

// Adds the plan's tensors to `w`: matrices F16 (or F32 with o.f32), vectors and the learned
// positions F32, each generated from (name, o.seed) when the writer streams it.
void add_projector_tensors(std::vector<ProjectorTensor>& plan, const MakeProjectorOptions& o,
                           gguf::GgufWriter& w);

}  // namespace vkllm::model
