// The Mamba-2 hybrids (llama.cpp's granitehybrid and nemotron_h), read on top of what every
// architecture reads (ModelSpec::from_gguf).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"

namespace vkllm::model {

// Granite 4.0-H (granitehybrid): a layer whose head_count_kv is 0 is a Mamba-2 mixer (ssm.*
// keys: conv kernel, inner size, state size, group count, time-step rank = heads), the others
// attention (llama-style RoPE when rope.scaling.finetuned, else none); every layer then has
// ffn_norm and a SwiGLU FFN. Granite's multipliers: embedding_scale, residual_scale,
// attention.scale, logit_scale. Attention biases are refused; the MoE variant (expert_count >
// 0) has its experts read by model_spec.cpp.
//
// Nemotron-H (nemotron_h, nemotron_h_moe): per layer, head_count_kv and feed_forward_length say
// what it is: both 0 a Mamba-2 mixer, feed_forward_length > 0 an FFN only (up, relu^2, down; with
// expert_count > 0 a MoE layer, layer_is_moe, whose experts model_spec.cpp reads), else
// attention without RoPE; one norm before each, nothing after.
//
// kv_heads: head_count_kv per layer. Checks every tensor it needs and refuses what it cannot run.
void read_mamba2(const gguf::GgufFile& f, const std::vector<uint32_t>& kv_heads, ModelSpec& s);

// Nemotron-H MoE (nemotron_h_moe, or nemotron_h with expert_count), as llama.cpp's nemotron_h
// graph runs it, before model_spec.cpp reads the experts (read_moe): its FFN layers are MoE
// layers of up-only relu^2 experts routed by sigmoid scores with the selection bias exp_probs_b,
// the k weights renormalised when expert_weights_norm (read_moe) and times expert_weights_scale,
// beside an up-only relu^2 shared expert. Nemotron 3 Super's experts work in a latent width
// (moe_latent_size: ffn_latent_down before, ffn_latent_up after them; both checked here).
// Refused by name: per-layer expert widths or counts (Nemotron 3 Puzzle), grouped top-k and MTP
// layers.
void read_nemotron_moe(const gguf::GgufFile& f, ModelSpec& s);

}  // namespace vkllm::model
