// Random-weight vision projectors in llama.cpp's mmproj layout (`vkllm dev make-model
// --projector`): the companion GGUF of a text model that llama.cpp's mtmd and vkllm's image
// encoder (engine/vision) load, for tests and benchmarks of the vision path (issue 38).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/gguf_writer.h"

namespace vkllm::model {

// A vision tower and its projector. Gemma 3: a SigLIP tower of image_size / patch_size patches a
// side, n_layer pre-LN ViT layers n_embd wide, then n_merge x n_merge average pooling, RMS norm
// and the projection to the text model's width. Mistral 3: a Pixtral tower (RMS norms, 2D RoPE,
// SiLU-gated FFN) over the image's own patch grid, an n_merge x n_merge patch merger and a GELU
// MLP to the text width (image_size is then only the metadata llama.cpp requires).
struct ProjectorShape {
  uint32_t image_size = 0;
  uint32_t patch_size = 0;
  uint32_t n_embd = 0;
  uint32_t n_layer = 0;
  uint32_t n_head = 0;
  uint32_t n_ff = 0;
  uint32_t n_merge = 0;       // pooling kernel or patch merger (a side); Gemma 3's divides the grid
  uint32_t n_wa_pattern = 0;  // Qwen2.5-VL: layers l with (l + 1) % n_wa_pattern == 0 attend fully
  // Qwen3-VL: a deepstack merger after layers every, 2 every, ... (8: layers 8, 16, 24 of 27, as
  // Qwen3-VL 8B's deepstack_visual_indexes), as many as the text model has.
  uint32_t deepstack_every = 0;
};

// "test" (224 px, patch 14, 2 layers 128 wide, 4 heads, FFN 512, 4x4 pooling: 16 image tokens),
// "test-wide" (test's image with the real tower's widths: 1152 wide, 16 heads of 72, FFN 4304)
// or "gemma3-4b" (the published SigLIP-So400m tower of Gemma 3 4B-27B: 896 px, patch 14, 27
// layers 1152 wide, 16 heads, FFN 4304, 4x4 pooling: 256 image tokens); ":N" after the name sets
// the layer count (gemma3-4b:1: the real image size and widths, one layer, for checks by hand).
// For --arch mistral3 (Pixtral): "test" (patch 14, 2 layers 128 wide, 4 heads of 32, FFN 256,
// 2x2 merger) or "pixtral-24b" (Mistral Small 3.1's tower: 1540 px, patch 14, 24 layers 1024
// wide, 16 heads, FFN 4096, 2x2 merger). For --arch qwen2vl (Qwen2.5-VL): "test" (patch 14, 2
// layers 128 wide, 4 heads of 32, FFN 256, the first layer windowed, the second full, 2x2
// merger) or "qwen25vl-7b" (Qwen2.5-VL 7B's tower: 32 layers 1280 wide, 16 heads, FFN 3420, full
// attention every 8th layer). For --arch gemma4 (Gemma 4's gemma4v tower; image_size is then
// the length of each learned position table): "test" (patch 16, 2 layers 128 wide, 4 heads of
// 32, FFN 256, 3x3 pooling, tables of 256) or "gemma4-e2b" (Gemma 4 E2B's tower: 16 layers 768
// wide, 12 heads, FFN 3072, tables of 10240). For --arch qwen3vl (Qwen3-VL): "test" (256 px
// positions, patch 16, 2 layers 128 wide, 4 heads of 32, FFN 256, deepstack after layer 1) or
// "qwen3vl-8b" (Qwen3-VL 8B's tower: 768 px positions, patch 16, 27 layers 1152 wide, 16 heads, FFN
// 4304, deepstack after layers 8, 16 and 24). Throws std::invalid_argument for another name.
ProjectorShape parse_projector_shape(std::string_view text, std::string_view arch = "gemma3");

struct MakeProjectorOptions {
  std::string arch = "gemma3";  // the text model's architecture: gemma3, mistral3, qwen2vl, gemma4,
                                // qwen3vl
  ProjectorShape shape;
  uint32_t text_embd = 0;  // the text model's width: the projector's output
  bool f32 = false;        // matrices F32 instead of F16 (vectors are always F32)
  uint64_t seed = 0;
  // mistral3: the text model's [IMG_BREAK] embedding (img_break_embedding), text_embd values,
  // which llama.cpp's converter copies into the projector as v.token_embd.img_break.
  std::vector<float> img_break;
  // qwen3vl: the text model's deepstack layers (qwen3vl.n_deepstack_layers), as many mergers.
  uint32_t n_deepstack = 0;
};

// The [IMG_BREAK] token's row (gguf::img_break_token) of the token embeddings of the text model
// declared in `text`, as floats. Throws std::invalid_argument when it has none.
std::vector<float> img_break_embedding(const gguf::GgufWriter& text);

// Declares the projector's clip.* metadata and v.* / mm.* tensors in `writer` (tensor data made
// lazily, as build_random_model does). Same options, same bytes. Throws std::invalid_argument
// for an architecture without a projector or an inconsistent shape.
void build_random_projector(const MakeProjectorOptions& options, gguf::GgufWriter& writer);

// build_random_projector's Gemma 4 tower (gemma4v_projector_maker.cpp).
void build_gemma4v_projector(const MakeProjectorOptions& options, gguf::GgufWriter& writer);

}  // namespace vkllm::model
