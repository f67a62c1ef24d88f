#include "engine/vulkan/moe_ops.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

#include "engine/gguf/quants.h"
#include "engine/vulkan/command_recorder.h"
#include "engine/vulkan/op_checks.h"
#include "engine/vulkan/pipeline.h"

namespace vkllm::vk::ops {

namespace {

using gguf::TensorType;

constexpr std::array kTypes = {
    TensorType::F32,    TensorType::F16,  TensorType::BF16,   TensorType::Q4_0,
    TensorType::Q4_1,   TensorType::Q5_0, TensorType::Q5_1,   TensorType::Q8_0,
    TensorType::IQ4_NL, TensorType::Q2_K, TensorType::Q3_K,   TensorType::Q4_K,
    TensorType::Q5_K,   TensorType::Q6_K, TensorType::IQ4_XS, TensorType::MXFP4};

}  // namespace

void moe_route(CommandRecorder& rec, PipelineCache& pc, const MoeRouteArgs& a) {
  require_arg(a.n_expert > 0 && a.n_expert <= kMoeMaxExperts,
              "moe_route: " + std::to_string(a.n_expert) + " experts (1 to 512 supported)");
  require_arg(a.n_used > 0 && a.n_used <= a.n_expert && a.n_used <= kMoeMaxUsed,
              "moe_route: experts per token out of range (1 to min(experts, 64))");
  if (a.n_tokens == 0) return;
  const bool scaled = static_cast<bool>(a.scales);
  require_arg(!scaled || a.scales.size >= 4ull * a.n_expert,
              "moe_route: fewer expert scales than experts");
  const bool biased = static_cast<bool>(a.bias);
  require_arg(!biased || (a.sigmoid_scores && a.bias.size >= 4ull * a.n_expert),
              "moe_route: a selection bias needs sigmoid scores and one value per expert");
  struct {
    uint32_t n_expert, n_used, n_tokens, norm, top_k_first, scaled;
    float weight_scale;
    uint32_t sigmoid, sigmoid_scores, biased;
  } push{a.n_expert,
         a.n_used,
         a.n_tokens,
         a.norm ? 1u : 0u,
         a.top_k_first ? 1u : 0u,
         scaled ? 1u : 0u,
         a.weight_scale,
         a.sigmoid ? 1u : 0u,
         a.sigmoid_scores ? 1u : 0u,
         biased ? 1u : 0u};
  // One workgroup a token, 64 invocations of 8 logits each (moe_route.comp: 512 experts).
  static_assert(kMoeMaxExperts == 8 * 64);
  const Pipeline& p = pc.get(
      {.shader = "moe_route", .num_buffers = 5, .push_constant_bytes = sizeof(push), .spec = {64}});
  const uint32_t gx = std::min(a.n_tokens, 65535u);
  // Without scales or a bias their binding is never read: the logits stand in.
  rec.dispatch(
      p, {a.logits, a.ids, a.weights, scaled ? a.scales : a.logits, biased ? a.bias : a.logits},
      push, {gx, div_up(a.n_tokens, gx), 1});
}

bool moe_matvec_supports(TensorType type) {
  return std::find(kTypes.begin(), kTypes.end(), type) != kTypes.end();
}

void moe_bias(CommandRecorder& rec, PipelineCache& pc, const MoeBiasArgs& a) {
  require_arg(a.rows > 0 && (!a.combine || a.n_used > 0), "moe_bias: empty rows or experts");
  if (a.n_items == 0) return;
  struct {
    uint32_t rows, n_items, n_used, combine, y_off, y_stride;
  } push{a.rows, a.n_items, a.n_used, a.combine ? 1u : 0u, 0, a.y_stride ? a.y_stride : a.rows};
  constexpr uint32_t wg = 64;
  const Pipeline& p = pc.get(
      {.shader = "moe_bias", .num_buffers = 4, .push_constant_bytes = sizeof(push), .spec = {wg}});
  rec.dispatch(p, {a.y, a.bias, a.ids, a.weights}, push,
               {div_up(a.rows, wg), std::min(a.n_items, 65535u), div_up(a.n_items, 65535)});
}

void moe_group(CommandRecorder& rec, PipelineCache& pc, const MoeGroupArgs& a) {
  require_arg(a.n_expert > 0 && a.n_expert <= kMoeMaxExperts,
              "moe_group: " + std::to_string(a.n_expert) + " experts (1 to 512 supported)");
  require_arg(a.ids.size >= 4ull * a.n_pairs, "moe_group: ids slice smaller than its pairs");
  require_arg(a.groups.size >= 4 * moe_group_words(a.n_pairs),
              "moe_group: groups slice smaller than moe_group_words");
  struct {
    uint32_t n_expert, n_pairs;
  } push{a.n_expert, a.n_pairs};
  const Pipeline& p = pc.get({.shader = "moe_group",
                              .num_buffers = 2,
                              .push_constant_bytes = sizeof(push),
                              .spec = {kMoeMaxExperts}});
  rec.dispatch(p, {a.ids, a.groups}, push, {1, 1, 1});
}

void moe_combine(CommandRecorder& rec, PipelineCache& pc, const MoeCombineArgs& a) {
  require_arg(a.rows > 0 && a.n_used > 0, "moe_combine: empty rows or experts");
  if (a.n_tokens == 0) return;
  const uint32_t y_stride = a.y_stride ? a.y_stride : a.rows;
  const uint64_t pairs = uint64_t{a.n_tokens} * a.n_used;
  require_arg(a.pairs.size >= pairs * a.rows * 4 && a.weights.size >= pairs * 4 &&
                  a.y.size >= ((uint64_t{a.n_tokens} - 1) * y_stride + a.rows) * 4,
              "moe_combine: a slice is smaller than the shape");
  struct {
    uint32_t rows, n_used, n_tokens, y_stride;
  } push{a.rows, a.n_used, a.n_tokens, y_stride};
  constexpr uint32_t wg = 64;
  const Pipeline& p = pc.get({.shader = "moe_combine",
                              .num_buffers = 3,
                              .push_constant_bytes = sizeof(push),
                              .spec = {wg}});
  rec.dispatch(p, {a.pairs, a.weights, a.y}, push,
               {div_up(a.rows, wg), std::min(a.n_tokens, 65535u), div_up(a.n_tokens, 65535)});
}

}  // namespace vkllm::vk::ops
