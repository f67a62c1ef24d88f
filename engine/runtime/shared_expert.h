// A MoE layer's shared expert (model::ModelSpec::n_ff_shexp), the graph's part after the routed
// experts: a dense SwiGLU FFN of the same normed input, optionally gated per token by
// sigmoid(ffn_gate_inp_shexp . x), added into the residual stream; for an up-only model
// (ModelSpec::moe_up_only, Nemotron-H MoE) down(relu(up x)^2). Qwen2-MoE, Qwen3.5-MoE,
// Qwen3-Next and Granite 4.0-H MoE run it after StepBackend::moe_ffn (Forward::moe_block,
// Mamba2Forward), as llama.cpp adds build_ffn's shared output to build_moe_ffn's.
#pragma once

#include <cstdint>

#include "engine/model/model_spec.h"
#include "engine/runtime/step_backend.h"

namespace vkllm::runtime {

// X += out_scale * gate(x) * down(silu(gate_shexp x) * up_shexp x) for the step's T tokens, x
// the FFN norm's rows (n_embd each). Uses Gate, Up, FfnAct and (gated) a column of Attn as
// scratch; the gate's factor and out_scale (Granite's residual scale) multiply the activation
// before the down product, which is linear. Nothing when the model has no shared expert.
void shared_expert(StepBackend& b, const model::ModelSpec& spec, uint32_t l, uint32_t T, Rows x,
                   float out_scale = 1.0f);

}  // namespace vkllm::runtime
