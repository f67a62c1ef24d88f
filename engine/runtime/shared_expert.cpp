#include "engine/runtime/shared_expert.h"

#include <stdexcept>

namespace vkllm::runtime {

using model::Weight;

void shared_expert(StepBackend& b, const model::ModelSpec& spec, uint32_t l, uint32_t T, Rows x,
                   float out_scale) {
  const uint32_t F = spec.n_ff_shexp;
  if (F == 0) return;
  if (spec.moe_up_only) {
    // Nemotron-H MoE: down(relu(up x)^2), relu(u) * u in place.
    if (spec.moe_shexp_gated || out_scale != 1.0f)
      throw std::logic_error("shared_expert: an up-only expert with a gate or an output scale");
    const ProductOut up[] = {{{Weight::FfnUpShexp, l}, {Act::Up, 0, F}}};
    b.products(x, T, up);
    b.barrier();
    b.gate_rows(GateAct::Relu, {Act::Up, 0, F}, {Act::Up, 0, F}, F, T);
    b.barrier();
    b.mark("shexp_up_relu2");
    const ProductOut out[] = {{{Weight::FfnDownShexp, l}, {Act::X}, /*accumulate=*/true}};
    b.products({Act::Up, 0, F}, T, out);
    b.barrier();
    b.mark("shexp_down");
    return;
  }
  const Rows gate_logit{Act::Attn, 0, 1};  // one value per token
  if (spec.moe_shexp_gated) {
    const ProductOut g[] = {{{Weight::FfnGateInpShexp, l}, gate_logit}};
    b.products(x, T, g);
  }
  const ProductOut outs[] = {{{Weight::FfnGateShexp, l}, {Act::Gate, 0, F}},
                             {{Weight::FfnUpShexp, l}, {Act::Up, 0, F}}};
  const WeightRef down[] = {{Weight::FfnDownShexp, l}};
  // The down product's quantized input is made with the activation unless it is scaled first.
  const bool scaled = spec.moe_shexp_gated || out_scale != 1.0f;
  b.products_then_glu(x, T, outs,
                      {GluAct::Silu,
                       {Act::Gate, 0, F},
                       {Act::Up, 0, F},
                       {Act::FfnAct, 0, F},
                       F,
                       scaled ? std::span<const WeightRef>() : std::span<const WeightRef>(down)});
  b.barrier();
  if (spec.moe_shexp_gated) {
    b.gate_rows(GateAct::Sigmoid, {Act::FfnAct, 0, F}, gate_logit, F, T, /*per_row=*/true);
    b.barrier();
  }
  if (out_scale != 1.0f) {
    b.scale_rows({Act::FfnAct, 0, F}, F, T, out_scale);
    b.barrier();
  }
  b.mark("shexp_gate_up_glu");
  const ProductOut out[] = {{down[0], {Act::X}, /*accumulate=*/true}};
  b.products({Act::FfnAct, 0, F}, T, out);
  b.barrier();
  b.mark("shexp_down");
}

}  // namespace vkllm::runtime
