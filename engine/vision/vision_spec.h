// What an image encoder is, read from a projector GGUF in llama.cpp's mmproj layout (clip.*
// metadata, v.* and mm.* tensors): the SigLIP tower's hyperparameters, the preprocessing it
// expects, and views of its weights in the mapped file. Gemma 3's projector for now (issue 38);
// the tower part is the one Qwen-VL, Pixtral and Gemma 4 towers will share.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/tensor_type.h"

namespace vkllm::vision {

// A weight as it lies in the file: ggml shape (shape[0] contiguous), type, bytes.
struct TensorRef {
  std::string name;
  gguf::TensorType type = gguf::TensorType::F32;
  std::vector<uint64_t> shape;
  std::span<const uint8_t> bytes;
};

struct VitLayerWeights {
  TensorRef ln1_w, ln1_b, ln2_w, ln2_b;
  TensorRef q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b;
  TensorRef up_w, up_b, down_w,
      down_b;  // fc1 (n_embd -> n_ff) and fc2, whatever the file calls them
};

enum class ProjectorType { Gemma3 };

struct VisionSpec {
  ProjectorType projector = ProjectorType::Gemma3;
  uint32_t image_size = 0;  // the square the image is resized (letterboxed) to
  uint32_t patch_size = 0;
  uint32_t n_embd = 0;
  uint32_t n_head = 0;
  uint32_t n_ff = 0;
  uint32_t n_layer = 0;
  float eps = 1e-6f;  // the layer norms' and the projector's RMS norm's
  std::array<float, 3> mean{}, std{};
  uint32_t n_merge = 4;    // Gemma 3's average pooling kernel (a side)
  uint32_t text_embd = 0;  // output width: the text model's
  uint32_t patches_per_side() const { return image_size / patch_size; }
  uint32_t n_patches() const { return patches_per_side() * patches_per_side(); }
  uint32_t n_output_tokens() const {
    const uint32_t side = patches_per_side() / n_merge;
    return side * side;
  }
  uint32_t head_dim() const { return n_embd / n_head; }
};

struct VisionWeights {
  TensorRef patch_w, patch_b, position;
  std::vector<VitLayerWeights> layers;
  TensorRef post_ln_w, post_ln_b;
  TensorRef soft_emb_norm_w;  // Gemma 3: RMS norm weight before the projection
  TensorRef input_proj_w;     // Gemma 3: ggml {text_embd, n_embd}
};

// Reads and checks the file (every tensor present with the shape the encoder reads; vectors
// F32). Throws std::runtime_error naming what is missing or wrong, e.g. an unsupported
// projector type. The views point into `file`, which must outlive them.
VisionSpec read_vision_spec(const gguf::GgufFile& file);
VisionWeights read_vision_weights(const gguf::GgufFile& file, const VisionSpec& spec);

// The tensor's values as floats (the norms, biases and positions both encoders keep in f32).
std::vector<float> tensor_to_f32(const TensorRef& t);

}  // namespace vkllm::vision
