// Random-weight Mamba-2 hybrids (`vkllm dev make-model --arch granitehybrid|nemotron_h|
// nemotron_h_moe`), with
// the metadata and tensors of llama.cpp's GGUFs of Granite 4.0-H and Nemotron-H, which llama.cpp
// loads unchanged.
#pragma once

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_maker.h"

namespace vkllm::model {

// Both: Mamba-2 mixers of d_inner = 2 x n_embd in heads of 64, a conv of 4 taps, state size 128
// (64 below 1024 wide), time-step biases near -4.5 and decays A near -1 (a memory of about 90
// tokens, so a state carried wrongly across prefill chunks shows in the last logits).
//
// granitehybrid: attention (no RoPE, as Granite 4.0-H) on every 10th layer (every 2nd below 10
// layers; the `test` shape: a mixer then attention), a SwiGLU FFN after every layer, one group
// (two below 1024 wide), Granite 4.0's multipliers (embedding 12, residual 0.22, attention
// 1/128) and logits divided by 0.5 (Granite's by 8 or 10, where random weights' logits would be
// near-ties). A shape's MoE variant (`test-moe`, `granite-4.0-h-tiny`) is Granite 4.0-H Tiny /
// Small's: every FFN the shape's experts (written as feed_forward_length; 8 of n_ff_exp, 2 per
// token unless set; router logits of std about 4) and an ungated shared expert (n_ff_shexp, else
// twice an expert).
//
// nemotron_h: layers in the pattern M-M-M-M*- (M a mixer, * attention without RoPE, - an FFN of
// relu^2); shapes of 3 layers or fewer (`test`: 3 layers, whatever it says) are M*-; 8 groups
// (4 below 1024 wide; fewer where there are fewer heads). nemotron_h_moe (Nemotron 3 Nano): Nano's
// pattern MEMEM*EMEMEM*... (E a MoE layer; `test`: M*E), each MoE layer the shape's up-only relu^2
// experts (8 of n_ff_exp, 2 per token unless set; router logits of std about 4, a selection bias
// of std 0.1, weights renormalised and scaled by 2.5) and an up-only shared expert (n_ff_shexp,
// else twice an expert); the mixer's width from the shape (mamba_d_inner: Nano's 4096) unless 0;
// with the shape's moe_latent (`test-latent`), Nemotron 3 Super's latent expert projections.
// Throws std::invalid_argument for an inconsistent shape.
void build_mamba2_model(const MakeModelOptions& o, const gguf::GgufFile& vocab,
                        gguf::GgufWriter& w);

}  // namespace vkllm::model
