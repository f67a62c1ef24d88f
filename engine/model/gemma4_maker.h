// Random-weight Gemma 4 text models (`vkllm dev make-model --arch gemma4`), with the metadata
// and tensors convert_hf_to_gguf.py writes for Gemma4ForConditionalGeneration's text part,
// which llama.cpp loads unchanged.
#pragma once

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_maker.h"

namespace vkllm::model {

// Gemma 4's layers from the shape: local layers of head_dim with n_head_kv K/V heads, global
// ones twice the head size with RoPE on a quarter of it (rope_freqs), base 1e6 (local 10000),
// tied embeddings, layer output scales; and as the published configs set them (E2B: 1536 x 35,
// 26B-A4B: 2816 x 30; test shapes, head size under 256, made to exercise every path): which
// layers are global (every 5th, 6th, or for test shapes 3rd, and always the last), their K/V
// heads (E2B 1, 26B 2, else half the local count), per-layer inputs (256 wide, none, 64), the
// last layers sharing KV (E2B's 20, none, all but the first period) with FFNs twice as wide
// (E2B and test shapes), and attn_v on global layers (E2B only: elsewhere V = K). With
// ModelShape::moe_variant every layer adds the shape's experts beside its dense FFN. Throws
// std::invalid_argument for an inconsistent shape.
void build_gemma4_model(const MakeModelOptions& o, const gguf::GgufFile& vocab,
                        gguf::GgufWriter& w);

}  // namespace vkllm::model
