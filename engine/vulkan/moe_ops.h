// Recording the mixture-of-experts kernels (shaders/moe_route.comp, shaders/moe_matvec.comp,
// shaders/moe_bias.comp, shaders/moe_group.comp, shaders/moe_combine.comp): routing on the
// device, products over the selected experts whose ids the kernels read from the device (no host
// round trip), and for the grouped expert GEMMs (MatmulKernels::record_moe_matmul) the pairs
// grouped by expert and the combine of their down products. One dispatch each, no barrier.
#pragma once

#include <cstdint>

#include "engine/gguf/tensor_type.h"
#include "engine/vulkan/buffer.h"

namespace vkllm::vk {
class CommandRecorder;
class PipelineCache;
}  // namespace vkllm::vk

namespace vkllm::vk::ops {

// Most experts moe_route handles.
inline constexpr uint32_t kMoeMaxExperts = 256;

// ids[t * n_used + k], weights[..]: token t's k-th most probable expert (softmax of its
// n_expert logits; ties: the lower index) and its probability, renormalised when `norm`. With
// `top_k_first` (gpt-oss): the k largest logits, weighted by a softmax over those k alone. With
// `scales` (Gemma 4's ffn_down_exps.scale, n_expert floats): each weight then times its expert's
// scale.
struct MoeRouteArgs {
  BufferSlice logits, ids, weights;
  uint32_t n_expert = 0, n_used = 0, n_tokens = 0;
  bool norm = true;
  bool top_k_first = false;
  BufferSlice scales{};
};
void moe_route(CommandRecorder& rec, PipelineCache& pipelines, const MoeRouteArgs& a);

// Products of the experts `ids` selects from a stacked [cols, rows, n_expert] weight tensor
// (file layout, repacked where weight_layout.h says; readable 16 bytes past its end):
//   combine false: y[q][row] = W[ids[q]][row] . x[x_per_pair ? q : q / n_used]  (q < n_items pairs)
//   combine true:  y[t][row] += sum_k weights[t * n_used + k] * W[ids[..]][row] . x[t * n_used + k]
//                  (t < n_items tokens; `weights` as moe_route writes them)
struct MoeMatvecArgs {
  gguf::TensorType type = gguf::TensorType::F32;
  BufferSlice w, x, y, ids, weights;
  uint32_t cols = 0, rows = 0, n_expert = 0, n_used = 0, n_items = 0;
  uint32_t x_stride = 0, y_stride = 0;  // 0: cols / rows
  bool x_per_pair = false, combine = false;
};
bool moe_matvec_supports(gguf::TensorType type);

// Expert biases (a [rows, n_expert] f32 tensor: expert e's bias is row e), shaders/moe_bias.comp:
//   combine false: y[q][row] += bias[ids[q]][row] for the n_items pairs (y rows packed);
//   combine true:  y[t][row] += sum_k weights[t * n_used + k] * bias[ids[t * n_used + k]][row]
//                  for the n_items tokens (y rows y_stride apart from y's start).
struct MoeBiasArgs {
  BufferSlice y, bias, ids, weights;
  uint32_t rows = 0, n_used = 0, n_items = 0;
  uint32_t y_stride = 0;  // 0: rows
  bool combine = false;
};
void moe_bias(CommandRecorder& rec, PipelineCache& pipelines, const MoeBiasArgs& a);
void moe_matvec(CommandRecorder& rec, PipelineCache& pipelines, const MoeMatvecArgs& a);

// The n_pairs (token, rank) pairs of `ids` (moe_route's, n_pairs = tokens * n_used) grouped by
// expert into `groups` (at least moe_group_words(n_pairs) words):
//   groups[e]                     how many pairs selected expert e (0 for e >= n_expert)
//   groups[kMoeMaxExperts + e]    where its pairs start in the list
//   groups[2 * kMoeMaxExperts + groups[kMoeMaxExperts + e] + i]
//                                 its i-th pair id q = t * n_used + k, ascending (token order)
// One workgroup (shaders/moe_group.comp); the order within an expert never depends on timing.
struct MoeGroupArgs {
  BufferSlice ids, groups;
  uint32_t n_expert = 0, n_pairs = 0;
};
inline uint64_t moe_group_words(uint64_t n_pairs) {
  return 2 * uint64_t{kMoeMaxExperts} + n_pairs;
}
void moe_group(CommandRecorder& rec, PipelineCache& pipelines, const MoeGroupArgs& a);

// The grouped path's last step (shaders/moe_combine.comp): for each of n_tokens tokens,
//   y[t * y_stride + row] += sum over k < n_used in rank order of
//                            weights[t * n_used + k] * pairs[(t * n_used + k) * rows + row]
// (pairs: each pair's down product, rows floats a row), as moe_matvec's combine sums.
struct MoeCombineArgs {
  BufferSlice pairs, weights, y;
  uint32_t rows = 0, n_used = 0, n_tokens = 0;
  uint32_t y_stride = 0;  // 0: rows
};
void moe_combine(CommandRecorder& rec, PipelineCache& pipelines, const MoeCombineArgs& a);

}  // namespace vkllm::vk::ops
