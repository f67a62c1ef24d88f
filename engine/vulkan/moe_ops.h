// Recording the mixture-of-experts kernels besides the expert products (MatmulKernels'
// record_moe_matvec and record_moe_matmul): routing on the device (shaders/moe_route.comp), so the
// products read the selected experts' ids there (no host round trip), expert biases
// (moe_bias.comp), and for the grouped GEMMs the pairs grouped by expert (moe_group.comp) and the
// combine of their down products (moe_combine.comp). One dispatch each, no barrier.
#pragma once

#include <cstdint>

#include "engine/gguf/tensor_type.h"
#include "engine/vulkan/buffer.h"

namespace vkllm::vk {
class CommandRecorder;
class PipelineCache;
}  // namespace vkllm::vk

namespace vkllm::vk::ops {

// Most experts, and most experts per token, moe_route handles.
inline constexpr uint32_t kMoeMaxExperts = 512;
inline constexpr uint32_t kMoeMaxUsed = 64;

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
  float weight_scale = 1.0f;  // every weight times this, last (runtime::MoeSpec::weight_scale)
  // Llama 4: the n_used largest logits, each weighted by its sigmoid (norm false).
  bool sigmoid = false;
  // DeepSeek V3 / Nemotron-H MoE: scores sigmoid(logit), the n_used best of score + bias[e]
  // (`bias`: n_expert floats; empty: none) chosen, weighted by their unbiased scores.
  bool sigmoid_scores = false;
  BufferSlice bias{};
};
void moe_route(CommandRecorder& rec, PipelineCache& pipelines, const MoeRouteArgs& a);

// Whether MatmulKernels::record_moe_matvec takes expert weights of `type`.
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
// (pairs: each pair's down product, rows floats a row), as record_moe_matvec's combine sums.
struct MoeCombineArgs {
  BufferSlice pairs, weights, y;
  uint32_t rows = 0, n_used = 0, n_tokens = 0;
  uint32_t y_stride = 0;  // 0: rows
};
void moe_combine(CommandRecorder& rec, PipelineCache& pipelines, const MoeCombineArgs& a);

}  // namespace vkllm::vk::ops
