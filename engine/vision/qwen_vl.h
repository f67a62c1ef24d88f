// Qwen2.5-VL's vision tower layout (llama.cpp's PROJECTOR_TYPE_QWEN25VL): which patch each of the
// tower's rows is, the windows its windowed layers attend within, and its 2D rotary embedding.
// Shared by the CPU and Vulkan encoders. Qwen3-VL's tower has the same rows with no windows (one
// window over the whole grid: its units row-major) and learned positions (qwen3vl_positions).
//
// The tower's rows are the patches of 2x2 merge units (each unit's four patches consecutive, row
// by row), the units grouped by window: windows of `window` x `window` units (4 for the
// published 112 px window: 8 x 8 patches, clipped at the right and bottom edges) in row-major
// order, the units within a window row-major. A windowed layer's attention is block-diagonal over
// those contiguous windows; a full one sees every row. The merger's output (one row per unit, in
// this order) goes back to the units' row-major order for the text model.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/vision/vision_spec.h"

namespace vkllm::vision {

struct QwenVlLayout {
  uint32_t grid_w = 0, grid_h = 0;  // patches (even)
  std::vector<uint32_t> order;      // order[i]: the row-major patch index of tower row i
  std::vector<uint32_t> pos;        // tower row i's patch (row, column) at 2i, 2i + 1
  std::vector<uint32_t> windows;    // window boundaries in tower rows: 0, ..., n_patches
  std::vector<uint32_t> unit_of;    // unit_of[r]: the merger row of row-major merge unit r
};

// The layout of a grid_w x grid_h patch grid (even sides, else std::invalid_argument).
QwenVlLayout qwen_vl_layout(uint32_t grid_w, uint32_t grid_h, uint32_t window);
// The layout for the tower of `spec` reading an image of width x height pixels: Qwen2.5-VL's
// windows, or Qwen3-VL's one window over all (units row-major).
QwenVlLayout qwen_vl_layout(const VisionSpec& spec, uint32_t width, uint32_t height);

// Qwen2.5-VL's vision RoPE (ggml_rope_multi in GGML_ROPE_TYPE_VISION with four head_dim / 4
// sections): each head's pair (p, p + head_dim / 2) turns, for p < head_dim / 4, by
// row * theta^(-4p / head_dim), for p >= head_dim / 4 by col * theta^(-4(p - head_dim/4) /
// head_dim), as HF's Qwen2_5_VisionRotaryEmbedding with rotate_half.
struct RopeVisionArgs {
  float* x = nullptr;  // token t, head h at x + t * stride + h * head_dim, rotated in place
  uint32_t stride = 0;
  uint32_t n_head = 0;
  uint32_t head_dim = 0;     // a multiple of 4
  const uint32_t* pos = {};  // token t's (row, column) at 2t, 2t + 1
  float theta = 10000.0f;
};

// Rotates tokens [begin, end).
void rope_vision(const RopeVisionArgs& a, uint32_t begin, uint32_t end);

// Qwen3-VL's learned positions for the tower rows of `layout`: the side x side table (row y * side
// + x, n_embd floats each) resized to the patch grid as ggml_interpolate does it (bilinear, align
// corners, single precision: llama.cpp's resize_position_embeddings), row i that of patch
// layout.order[i]. One row per tower row, n_embd floats each.
std::vector<float> qwen3vl_positions(const float* table, uint32_t side, uint32_t n_embd,
                                     const QwenVlLayout& layout);

}  // namespace vkllm::vision
