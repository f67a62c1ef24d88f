// The mixture-of-experts part of ModelSpec::from_gguf: the expert keys and tensors every MoE
// architecture shares (read_moe, with the shared expert where the file has one) and gpt-oss's
// whole layer layout (read_gpt_oss). Part of the model module's implementation.
#pragma once

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"
#include "engine/model/spec_keys.h"

namespace vkllm::model::detail {

// expert_count / expert_used_count / expert widths, weight normalisation, the shared expert, and
// every MoE layer's router, expert and bias tensors checked against them. Throws
// std::runtime_error naming what is missing or misshapen.
void read_moe(const gguf::GgufFile& f, const Keys& k, ModelSpec& s);

// gpt-oss (llama.cpp's openai-moe): its attention and FFN settings, then read_moe, then its
// per-layer sinks and biases checked.
void read_gpt_oss(const gguf::GgufFile& f, const Keys& k, ModelSpec& s);

}  // namespace vkllm::model::detail
