// VulkanBackend::moe_ffn (declared in vulkan_backend_impl.h).
#include <stdexcept>
#include <string>

#include "engine/runtime/vulkan_backend_impl.h"
#include "engine/vulkan/moe_ops.h"

namespace vkllm::runtime::detail {

using model::Weight;

void VulkanBackend::check_moe_weights() const {
  if (spec_.n_expert > vk::ops::kMoeMaxExperts) {
    throw std::runtime_error("the Vulkan backend routes at most " +
                             std::to_string(vk::ops::kMoeMaxExperts) + " experts; this model has " +
                             std::to_string(spec_.n_expert));
  }
  for (uint32_t l = m_.layers().first; l < m_.layers().end; ++l) {
    for (Weight w : {Weight::FfnGateExps, Weight::FfnUpExps, Weight::FfnDownExps}) {
      const DeviceTensor& t = get({w, l});
      if (!vk::ops::moe_matvec_supports(t.type)) {
        throw std::runtime_error(t.name + ": no Vulkan expert kernel for weights of type " +
                                 std::string(gguf::type_name(t.type)));
      }
      if (t.parts.size() != 1) {
        throw std::runtime_error(t.name + " is larger than one storage-buffer binding");
      }
    }
  }
}

void VulkanBackend::moe_ffn(const MoeSpec& m, uint32_t T) {
  if (T == 0) return;
  const uint32_t K = m.n_used, F = m.n_ff, E = m.n_embd;
  const DeviceTensor& gate = get({Weight::FfnGateExps, m.layer});
  const DeviceTensor& up = get({Weight::FfnUpExps, m.layer});
  const DeviceTensor& down = get({Weight::FfnDownExps, m.layer});

  // Router logits into Up (n_expert per token; free until the up products).
  const ProductOut router[] = {{{Weight::FfnGateInp, m.layer}, {Act::Up, 0, m.n_expert}}};
  products(m.x, T, router);
  if (m.biases) {
    barrier();
    add_bias({Weight::FfnGateInpBias, m.layer}, {Act::Up, 0, m.n_expert}, m.n_expert, T);
  }
  barrier();
  vk::ops::MoeRouteArgs r;
  r.logits = mem_.buf(Act::Up);
  r.ids = mem_.moe_ids;
  r.weights = mem_.moe_weights;
  r.n_expert = m.n_expert;
  r.n_used = K;
  r.n_tokens = T;
  r.norm = m.norm_weights;
  r.top_k_first = m.softmax_after_top_k;
  vk::ops::moe_route(*rec_, ctx_.pipelines(), r);
  barrier();

  // Gate and up of every (token, rank) pair.
  vk::ops::MoeMatvecArgs a;
  a.cols = E;
  a.rows = F;
  a.n_expert = m.n_expert;
  a.n_used = K;
  a.n_items = T * K;
  a.x = mem_.slice(m.x);
  a.x_stride = m.x.stride;
  a.ids = mem_.moe_ids;
  a.weights = mem_.moe_weights;
  for (const auto& [w, out] : {std::pair{&gate, Act::Gate}, std::pair{&up, Act::Up}}) {
    a.type = w->type;
    a.w = w->data;
    a.y = mem_.buf(out);
    vk::ops::moe_matvec(*rec_, ctx_.pipelines(), a);
    wrote(out);
  }
  if (m.biases) {
    barrier();
    for (const auto& [w, out] : {std::pair{Weight::FfnGateExpsBias, Act::Gate},
                                 std::pair{Weight::FfnUpExpsBias, Act::Up}}) {
      vk::ops::moe_bias(*rec_, ctx_.pipelines(),
                        {.y = mem_.buf(out),
                         .bias = get({w, m.layer}).data,
                         .ids = mem_.moe_ids,
                         .weights = mem_.moe_weights,
                         .rows = F,
                         .n_used = K,
                         .n_items = T * K});
    }
  }
  barrier();
  glu(m.act, {Act::Gate}, {Act::Up}, {Act::FfnAct}, F, T * K, {});
  barrier();

  // Down products of each token's pairs, weighted and summed into the residual.
  vk::ops::MoeMatvecArgs d = a;
  d.type = down.type;
  d.w = down.data;
  d.cols = F;
  d.rows = E;
  d.n_items = T;
  d.x = mem_.buf(Act::FfnAct);
  d.x_stride = F;
  d.x_per_pair = true;
  d.combine = true;
  d.y = mem_.slice(m.out);
  d.y_stride = m.out.stride;
  vk::ops::moe_matvec(*rec_, ctx_.pipelines(), d);
  if (m.biases) {
    barrier();
    vk::ops::moe_bias(*rec_, ctx_.pipelines(),
                      {.y = mem_.slice(m.out),
                       .bias = get({Weight::FfnDownExpsBias, m.layer}).data,
                       .ids = mem_.moe_ids,
                       .weights = mem_.moe_weights,
                       .rows = E,
                       .n_used = K,
                       .n_items = T,
                       .y_stride = m.out.stride,
                       .combine = true});
  }
  wrote(m.out.act);
}

}  // namespace vkllm::runtime::detail
