// Random-weight Qwen3.5 text models (`vkllm dev make-model --arch qwen35`, its MoE variant
// `qwen35moe` and the older Qwen3-Next `qwen3next`), with the metadata and tensors of llama.cpp's
// GGUFs of those architectures, which llama.cpp loads unchanged.
#pragma once

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_maker.h"

namespace vkllm::model {

// The shape's attention (n_head query heads with an output gate, n_head_kv K/V heads of
// head_dim, Q/K norms, a quarter of each head rotated, base 1e7 unless set) on every
// full_attention_interval-th layer (4; 2 for models of fewer than 4 layers), Gated DeltaNet on
// the others: n_head key heads and 2 x n_head value heads of min(head_dim, 128), a conv of 4 taps;
// decays -0.1 x (1 + N(0, 0.05)) (trained models forget slowly). Throws std::invalid_argument for
// an inconsistent shape. qwen35moe and qwen3next: every FFN is the shape's experts (8 of n_ff / 2,
// 2 per token, unless set; router logits of std about 4) and a gated shared expert (n_ff_shexp,
// else one expert's width); qwen3next: its DeltaNet's beta|alpha in one ssm_ba per layer (value
// heads grouped by key head) and plain NeoX RoPE.
void build_qwen35_model(const MakeModelOptions& o, const gguf::GgufFile& vocab,
                        gguf::GgufWriter& w);

}  // namespace vkllm::model
