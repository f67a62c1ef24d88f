// What an image encoder is, read from a projector GGUF in llama.cpp's mmproj layout (clip.*
// metadata, v.* and mm.* tensors): the tower's hyperparameters, the preprocessing it expects, and
// views of its weights in the mapped file (issue 38). Two projector types: Gemma 3's (a SigLIP
// tower: learned positions, LayerNorm, GELU MLP, a fixed square image, average pooling) and
// Pixtral's for Mistral 3 (2D RoPE, RMS norms, SiLU-gated FFN, the image's own patch grid, a 2x2
// patch merger and a GELU MLP, with an [IMG_BREAK] row after each row of merged patches); and
// Qwen2.5-VL's (two-frame patch kernels, 2D M-RoPE, window attention with full-attention layers
// every n_wa_pattern, RMS norms, SiLU-gated FFN, a 2x2 merger MLP); Gemma 4's (gemma4v:
// engine/vision/gemma4_vision.h reads its weights); and Qwen3-VL's (the same
// patches and 2D M-RoPE with full attention, learned positions interpolated to the grid,
// LayerNorms, a GELU MLP, the merger and the deepstack mergers whose outputs follow its rows).
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

// A bias or norm weight a projector may leave out is an empty TensorRef (no bytes).
struct VitLayerWeights {
  TensorRef ln1_w, ln1_b, ln2_w, ln2_b;
  TensorRef q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b;
  TensorRef up_w, up_b, down_w,
      down_b;                // fc1 (n_embd -> n_ff) and fc2, whatever the file calls them
  TensorRef gate_w, gate_b;  // Pixtral, Qwen2.5-VL: the SiLU gate (n_embd -> n_ff)
};

// Qwen3-VL's deepstack merger after tower layer `layer`: LayerNorm over a unit's 4 rows (4 x
// n_embd), fc1 (square), GELU, fc2 to the text width; all with biases.
struct DeepstackWeights {
  uint32_t layer = 0;
  TensorRef norm_w, norm_b, fc1_w, fc1_b, fc2_w, fc2_b;
};

enum class ProjectorType { Gemma3, Pixtral, Qwen25vl, Qwen3vl, Gemma4v };

// The size the tower reads an image at (pixels), and its patch grid.
struct TowerSize {
  uint32_t width = 0, height = 0;
};

struct VisionSpec {
  ProjectorType projector = ProjectorType::Gemma3;
  uint32_t image_size = 0;  // Gemma 3: the square the image is resized (letterboxed) to
  uint32_t patch_size = 0;
  uint32_t n_embd = 0;
  uint32_t n_head = 0;
  uint32_t n_ff = 0;
  uint32_t n_layer = 0;
  float eps = 1e-6f;  // the layer norms' and the projector's RMS norm's
  std::array<float, 3> mean{}, std{};
  uint32_t n_merge = 4;    // Gemma 3's average pooling kernel, Pixtral's patch merger (a side)
  uint32_t text_embd = 0;  // output width: the text model's
  // Pixtral, Qwen2.5-VL: the RoPE base and the pixel budget llama.cpp resizes an image into (8
  // to 1024 (Pixtral) or 4096 (Qwen2.5-VL) merged patches of (patch_size * n_merge)^2 pixels).
  float rope_theta = 10000.0f;
  uint32_t min_pixels = 0, max_pixels = 0;
  // Qwen2.5-VL: layer l attends fully when (l + 1) % n_wa_pattern == 0, else within windows of
  // `window` x `window` merged patches (llama.cpp's 112 px / patch / merge).
  uint32_t n_wa_pattern = 0;
  uint32_t window = 0;
  // Gemma 4 (gemma4v, engine/vision/gemma4_vision.h): each learned position table's rows.
  uint32_t n_positions = 0;
  // Qwen3-VL: the tower layers after which a deepstack merger takes the hidden state (ascending),
  // and the side of its learned position square (v.position_embd: pos_side^2 rows).
  std::vector<uint32_t> deepstack_layers;
  uint32_t pos_side = 0;
  bool dynamic() const { return projector != ProjectorType::Gemma3; }
  // Qwen2.5-VL and Qwen3-VL: one row per 2x2 merge unit, M-RoPE positions in the text model.
  bool qwen_vl() const {
    return projector == ProjectorType::Qwen25vl || projector == ProjectorType::Qwen3vl;
  }
  // Floats per output row: the text width, times 1 + the deepstack mergers (Qwen3-VL: the
  // merger's row, then each deepstack merger's, as llama.cpp concatenates them).
  uint32_t out_embd() const {
    return text_embd * (1 + static_cast<uint32_t>(deepstack_layers.size()));
  }
  bool full_attention(uint32_t layer) const {
    return n_wa_pattern == 0 || (layer + 1) % n_wa_pattern == 0;
  }
  // Gemma 3's fixed square (the accessors below are its); Pixtral's grid is the image's.
  uint32_t patches_per_side() const { return image_size / patch_size; }
  uint32_t n_patches() const { return patches_per_side() * patches_per_side(); }
  uint32_t n_output_tokens() const {
    const uint32_t side = patches_per_side() / n_merge;
    return side * side;
  }
  uint32_t head_dim() const { return n_embd / n_head; }
};

// The size the tower reads an image of width x height at: Gemma 3's square; Pixtral's
// aspect-preserving fit to multiples of patch_size * n_merge within the pixel budget, as
// llama.cpp's calc_size_preserved_ratio rounds it.
TowerSize tower_size(const VisionSpec& spec, uint32_t width, uint32_t height);
// The rows an image of width x height becomes in the prompt (Pixtral: its merged patches and an
// [IMG_BREAK] row after each row but the last; Qwen2.5-VL, Qwen3-VL: its merged patches).
uint32_t image_token_count(const VisionSpec& spec, uint32_t width, uint32_t height);

struct VisionWeights {
  TensorRef patch_w, patch_b, position;
  TensorRef pre_ln_w;  // Pixtral: RMS norm before the first layer
  std::vector<VitLayerWeights> layers;
  TensorRef post_ln_w, post_ln_b;
  TensorRef soft_emb_norm_w;  // Gemma 3: RMS norm weight before the projection
  TensorRef input_proj_w;     // Gemma 3: ggml {text_embd, n_embd}
  // Pixtral: RMS norm and the patch merger (n_merge^2 x n_embd -> n_embd; absent: no merging),
  // the MLP (mm.1: n_embd -> text, GELU, mm.2: text -> text; biases optional) and the
  // [IMG_BREAK] token's embedding (text_embd).
  // Qwen2.5-VL: the second frame's patch kernel (patch_w1), the merger's RMS norm (post_ln_w)
  // and MLP (mm1: the file's mm.0, 4 n_embd square; mm2: mm.2, 4 n_embd -> text).
  TensorRef input_norm_w, merger_w, mm1_w, mm1_b, mm2_w, mm2_b, img_break;
  TensorRef patch_w1;
  // Qwen3-VL: as Qwen2.5-VL's with a patch bias, learned positions (position), the merger's
  // LayerNorm (post_ln_w / _b) and the deepstack mergers; each layer's fused attn_qkv is read as
  // the q, k and v views of its thirds.
  std::vector<DeepstackWeights> deepstack;
};

// Reads and checks the file (every tensor present with the shape the encoder reads; vectors
// F32). Throws std::runtime_error naming what is missing or wrong, e.g. an unsupported
// projector type. The views point into `file`, which must outlive them.
VisionSpec read_vision_spec(const gguf::GgufFile& file);
VisionWeights read_vision_weights(const gguf::GgufFile& file, const VisionSpec& spec);

// The tensor's values as floats (the norms, biases and positions both encoders keep in f32).
std::vector<float> tensor_to_f32(const TensorRef& t);

}  // namespace vkllm::vision
