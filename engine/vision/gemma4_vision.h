// Gemma 4's vision tower and projector (llama.cpp's PROJECTOR_TYPE_GEMMA4V, "gemma4v"): what it
// reads from the mmproj, its 2D RoPE, and the tower on the CPU kernels.
//
// The image is resized (bicubic, letterboxed) to its own size in multiples of patch_size x n_merge
// within 70 to 1120 pooled tokens, scaled to [-1, 1], cut into patches by a bias-free kernel,
// given learned positions from two tables (its column's row of the first, its row's of the
// second), then run through layers of:
//   h = rms(x) ln1; q, k, v = linear(h); q, k per-head RMS-normed with weights, v without;
//   q, k rotated (the first half of each head by the patch's column, the second by its row, each
//   half NeoX-style: pair (i, i + head_dim / 4) turns by pos * theta^(-4i / head_dim), theta
//   100); attention unscaled (QK^T, no 1/sqrt(d)); x += rms(linear(att)) attn_post_norm;
//   x += rms(down(act(gate(h')) * up(h'))) ffn_post_norm with h' = rms(x) ln2;
//   x *= the layer's scale.
// Every linear layer clamps its input and its output where the file gives bounds
// (Gemma4ClippableLinear). Then n_merge x n_merge average pooling times sqrt(n_embd),
// (x - std_bias) * std_scale, an RMS norm without weight and the projection to the text width:
// one row per pooled patch, row-major. The FFN activation is clip.use_gelu's tanh GELU,
// clip.use_silu's SiLU, else (as the published files leave both out) the quick GELU, as llama.cpp.
#pragma once

#include <cfloat>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/vision/image_encoder.h"
#include "engine/vision/vision_spec.h"

namespace vkllm::cpu {
class ThreadPool;
class MatmulWorkspace;
}  // namespace vkllm::cpu
namespace vkllm::vk {
class Context;
}

namespace vkllm::vision {

// A linear layer's clamp bounds (the file's .input_min/.input_max/.output_min/.output_max
// scalars; absent: unbounded).
struct Gemma4vClamp {
  float in_min = -FLT_MAX, in_max = FLT_MAX, out_min = -FLT_MAX, out_max = FLT_MAX;
  bool clamps_input() const { return in_min > -FLT_MAX || in_max < FLT_MAX; }
  bool clamps_output() const { return out_min > -FLT_MAX || out_max < FLT_MAX; }
};

struct Gemma4vLinear {
  TensorRef w;  // ggml {in, out}
  Gemma4vClamp clamp;
};

struct Gemma4vLayer {
  TensorRef ln1, q_norm, k_norm, attn_post_norm, ln2, ffn_post_norm, out_scale;
  Gemma4vLinear q, k, v, o, gate, up, down;
};

enum class Gemma4vAct : uint32_t { GeluTanh, GeluQuick, Silu };

struct Gemma4vWeights {
  TensorRef patch;     // {P, P, 3, E}
  TensorRef position;  // {E, n_positions, 2}: the column table, then the row table
  std::vector<Gemma4vLayer> layers;
  TensorRef std_bias, std_scale;  // optional, {E}
  Gemma4vLinear proj;             // mm.input_projection: {E, text width}
  Gemma4vAct act = Gemma4vAct::GeluQuick;
};

// The "gemma4v" projector's spec (read_vision_spec calls it): llama.cpp's fixed RoPE base 100,
// pooling clip.vision.projector.scale_factor (default 3), the budget of 70 to 1120 pooled
// patches. Throws std::runtime_error naming what is missing.
VisionSpec read_gemma4v_spec(const gguf::GgufFile& file);
Gemma4vWeights read_gemma4v_weights(const gguf::GgufFile& file, const VisionSpec& spec);

// Rotates tokens [begin, end) of a grid `grid_width` patches wide (token t at column
// t % grid_width, row t / grid_width) as the header says; head_dim a multiple of 4.
struct Gemma4vRopeArgs {
  float* x = nullptr;  // token t, head h at x + t * stride + h * head_dim
  uint32_t stride = 0;
  uint32_t n_head = 0;
  uint32_t head_dim = 0;
  uint32_t grid_width = 0;
  float theta = 100.0f;
};
void rope_gemma4v(const Gemma4vRopeArgs& a, uint32_t begin, uint32_t end);

// The quick GELU (x * sigmoid(1.702 x)) of gate times up, n values.
void gelu_quick_mul(float* gate, const float* up, uint64_t n);

// The tower on the CPU backend's kernels, on the owning ImageEncoder's pool and scratch.
class Gemma4vCpuTower {
 public:
  Gemma4vCpuTower(const VisionSpec& spec, const Gemma4vWeights& w, cpu::ThreadPool& pool,
                  cpu::MatmulWorkspace& ws);
  ~Gemma4vCpuTower();
  ImageEmbeddings encode(const TowerPixels& pixels);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// The tower on a Vulkan device (vulkan_gemma4_encoder.cpp), one submission an image: its rows in
// pooling-window order (each pooled cell's n_merge^2 patches consecutive, so the pooling is
// pool_rows' mean), Q and K weights with the second and third quarters of each head swapped so
// that the Qwen2.5-VL mode of the 2D RoPE kernel turns them as Gemma 4 does (attention is
// indifferent to a permutation of the head's dimensions shared by Q and K), the query norm's
// weight times sqrt(head_dim) to undo the attention kernel's 1/sqrt(head_dim) (Gemma 4 scales by
// 1), K/V through the kernel's f16 region.
class Gemma4vVulkanTower {
 public:
  Gemma4vVulkanTower(vk::Context& ctx, const VisionSpec& spec, const Gemma4vWeights& w);
  ~Gemma4vVulkanTower();
  ImageEmbeddings encode(const TowerPixels& pixels);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace vkllm::vision
