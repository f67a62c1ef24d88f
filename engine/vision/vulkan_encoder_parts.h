// The Vulkan image encoder's parts (vulkan_image_encoder.h), shared by its files: the device
// weights and buffers of a tower, and the helpers that upload weights and record a tower layer's
// attention. Internal to engine/vision.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/kv/kv_layout.h"
#include "engine/vision/vision_spec.h"
#include "engine/vision/vulkan_image_encoder.h"
#include "engine/vulkan/context.h"
#include "engine/vulkan/matmul_ops.h"
#include "engine/vulkan/ops.h"

namespace vkllm::vision {

// A weight matrix on the device, in the kernels' layout, with its product shape; and a layer's
// weights. Outside the anonymous namespace: Impl, a member of an exported class, holds them.
struct DeviceMatrix {
  vk::Buffer buffer;
  gguf::TensorType type = gguf::TensorType::F32;
  uint32_t rows = 0, cols = 0;
};

struct DeviceLayer {
  vk::Buffer ln1_w, ln1_b, ln2_w, ln2_b, q_b, k_b, v_b, o_b, up_b, down_b, gate_b;
  DeviceMatrix q, k, v, o, up, down, gate;  // gate: Pixtral's, Qwen2.5-VL's
};

// Qwen3-VL's deepstack merger after tower layer `layer` (vision_spec.h DeepstackWeights).
struct DeviceDeepstack {
  uint32_t layer = 0;
  vk::Buffer norm_w, norm_b, fc1_b, fc2_b;
  DeviceMatrix fc1, fc2;
};

// Pixtral's, Qwen2.5-VL's or Qwen3-VL's weights, and the per-image buffers, grown to the largest
// image seen (the patch grid is the image's). Optional vectors are empty buffers.
struct DynamicTower {
  DeviceMatrix patch, merger, mm1, mm2;
  vk::Buffer patch_b, pre_ln_w, post_ln_w, post_ln_b, input_norm_w, mm1_b, mm2_b;
  std::vector<DeviceLayer> layers;
  // Qwen3-VL: LayerNorms (with biases) and a GELU MLP instead of RMS norms and the SiLU gate;
  // its learned position table (host, pos_side^2 rows) and deepstack mergers.
  bool layer_norms = false;
  std::vector<float> position;
  std::vector<DeviceDeepstack> deepstack;
  vk::Buffer pos_embd;  // this image's interpolated positions (Qwen3-VL)
  std::vector<float> img_break;
  uint32_t capacity = 0;  // patches the buffers below hold
  vk::Buffer cols, x, h, q, k, v, att, gate, up, hidden, out, k_cache, v_cache, meta, pos;
  uint32_t cache_blocks = 0;  // K/V blocks the caches hold
  vk::Buffer window_meta;     // Qwen2.5-VL: the windowed layers' batch (a sequence a window)
};

struct VulkanImageEncoder::Impl {
  Impl(vk::Context& c) : ctx(c), matmul(c.pipelines()) {}
  vk::Context& ctx;
  vk::MatmulKernels matmul;
  DeviceMatrix patch, projection;
  vk::Buffer patch_b, position, post_ln_w, post_ln_b, soft_norm_w;
  std::vector<DeviceLayer> layers;
  std::vector<uint32_t> order;  // order[i]: the grid patch that is token i (window order)
  // Per-image buffers, made once for the tower's fixed patch count.
  vk::Buffer cols, x, h, q, k, v, att, ff, pooled, out, k_cache, v_cache, attn_meta, pool_meta;
  kv::BatchMeta attn_batch, pool_batch;
  std::unique_ptr<DynamicTower> dynamic;  // Pixtral, Qwen2.5-VL

  void product(vk::CommandRecorder& rec, const DeviceMatrix& w, vk::BufferSlice x_in, uint32_t n,
               vk::BufferSlice y, bool accumulate = false) {
    vk::MatmulArgs a;
    a.type = w.type;
    a.weights = w.buffer.slice();
    a.x = x_in;
    a.y = y;
    a.rows = w.rows;
    a.cols = w.cols;
    a.batch = n;
    a.accumulate = accumulate;
    matmul.record(rec, a);
  }

  // One layer of a Pixtral, Qwen2.5-VL or Qwen3-VL tower over the tower's n rows (x in, x out):
  // the pre-norm, Q/K/V and their biases, the 2D RoPE (`rope_halves`: Qwen-VL's rotation),
  // attention over `batch` (the image, or its windows), the output added into x, the SiLU-gated
  // FFN (Qwen3-VL: the GELU MLP) added into x. Biases a tower does not have are skipped. Ends with
  // a barrier.
  void dynamic_layer(vk::CommandRecorder& rec, const VisionSpec& s, DynamicTower& tw,
                     const DeviceLayer& L, uint32_t n, const vk::ops::BatchInfo& batch,
                     uint32_t max_q_len, const vk::ops::CacheRegion& kc,
                     const vk::ops::CacheRegion& vc, bool rope_halves);
};

// A matrix of `cols` inputs per row onto the device in the kernels' layout.
DeviceMatrix upload_matrix(vk::Context& ctx, gguf::TensorType type, std::span<const uint8_t> bytes,
                           uint32_t cols, uint32_t rows, const std::string& name);
DeviceMatrix upload_matrix(vk::Context& ctx, const TensorRef& t, uint32_t cols);
// F32 vectors (an empty one: an empty buffer, an optional tensor the file leaves out).
vk::Buffer upload_floats(vk::Context& ctx, std::span<const float> values, const std::string& name);
vk::Buffer upload_vector(vk::Context& ctx, const TensorRef& t);

// y = rms_norm(x) * w over n_rows rows of n (y may be x), then a barrier; and x[r] += b over
// n_rows rows of n where the tower has the bias (an empty buffer: none), no barrier.
void tower_rms_norm(vk::CommandRecorder& rec, vk::PipelineCache& pl, const vk::Buffer& x,
                    const vk::Buffer& w, const vk::Buffer& y, uint32_t n, uint32_t n_rows,
                    float eps);
void tower_add_bias(vk::CommandRecorder& rec, vk::PipelineCache& pl, const vk::Buffer& x,
                    const vk::Buffer& b, uint32_t n, uint32_t n_rows);
// The tower's norm: LayerNorm with weight w and bias b when `layer_norm` (Qwen3-VL), else the
// RMS norm (b unused); then a barrier. Slices, so a norm may read rows of several tower rows.
void tower_norm(vk::CommandRecorder& rec, vk::PipelineCache& pl, bool layer_norm, vk::BufferSlice x,
                const vk::Buffer& w, const vk::Buffer& b, vk::BufferSlice y, uint32_t n,
                uint32_t n_rows, float eps);

// A tower layer's attention over the sequences of `batch` (one image, or its windows): every
// token attends to every token of its sequence (no mask), the K and V rows written through the
// sequences' block tables into kc / vc first. Ends with a barrier.
void tower_attention(vk::CommandRecorder& rec, vk::PipelineCache& pl,
                     const vk::ops::BatchInfo& batch, const vk::ops::CacheRegion& kc,
                     const vk::ops::CacheRegion& vc, const vk::Buffer& q, const vk::Buffer& k,
                     const vk::Buffer& v, const vk::Buffer& out, uint32_t max_q_len,
                     uint32_t n_head, uint32_t head_dim);

}  // namespace vkllm::vision
