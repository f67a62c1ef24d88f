// Reading a vision projector GGUF's keys and tensors (llama.cpp's mmproj layout), checked, with
// errors that name what is missing or wrong; and a projector matrix as the CPU matmul reads it.
// Shared by the spec readers (vision_spec.cpp, gemma4_vision.cpp) and the CPU encoders.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/cpu/quant_matmul.h"
#include "engine/gguf/gguf_file.h"
#include "engine/vision/vision_spec.h"

namespace vkllm::vision {

// The key's value; std::runtime_error when absent or 0.
uint32_t need_u32(const gguf::GgufFile& f, const std::string& key);

// The tensor of exactly this shape (ggml order) in a type vkllm can read; std::runtime_error
// naming it (and the file's shape) otherwise.
TensorRef need_tensor(const gguf::GgufFile& f, const std::string& name,
                      const std::vector<uint64_t>& shape);

// A tensor the projector may leave out (biases, optional norms): empty when absent, checked
// like need_tensor when present.
TensorRef optional_tensor(const gguf::GgufFile& f, const std::string& name,
                          const std::vector<uint64_t>& shape);

// The dynamic-resolution towers' (Pixtral, Qwen2.5-VL, Qwen3-VL, Gemma 4) size check and pixel
// budget: heads a multiple of 4 wide (their 2D RoPE), the merge side n_merge (`merge` when not 0,
// else any but 0), and min_pixels / max_pixels for min_units .. max_units merged patches.
// std::runtime_error naming `kind` otherwise.
void set_merged_patch_budget(VisionSpec& s, const char* kind, uint32_t merge, uint32_t min_units,
                             uint32_t max_units);

// A file matrix as the CPU matmul reads it: rows of `cols` inputs (higher dims flattened into
// the row, as for a patch kernel whose row is one output channel's 3 x P x P taps);
// std::runtime_error for a type the CPU matmul does not take.
cpu::WeightView matrix_view(const TensorRef& t, uint64_t cols);

}  // namespace vkllm::vision
