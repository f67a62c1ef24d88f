// A MoE layer's routed experts as the model describes them: the MoeSpec every decoder graph with
// mixture-of-experts layers hands to StepBackend::moe_ffn (Forward::moe_block, Mamba2Forward), so
// the routing, activation and biases a ModelSpec sets reach every graph the same way. The shared
// expert, where there is one, follows (shared_expert.h).
#pragma once

#include <cstdint>

#include "engine/model/model_spec.h"
#include "engine/runtime/step_backend.h"

namespace vkllm::runtime {

// The FFN's gated activation for `activation` (GluAct of the dense FFN and of the experts).
GluAct glu_act_of(model::Activation activation);

// Layer l's routed experts: input H (the FFN norm's rows), their weighted sum added into X.
MoeSpec routed_experts(const model::ModelSpec& spec, uint32_t l);

}  // namespace vkllm::runtime
