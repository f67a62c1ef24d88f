// Qwen3.5's (and Qwen3-Next's) multi-token-prediction (NextN, "MTP") block as a model of its own.
// llama.cpp's converter appends it to the decoder's layers (block_count counts it,
// nextn_predict_layers says how many there are); the decoder runs without it (qwen35_spec.cpp). Run
// as a drafter, it reads the token at position p and the model's hidden state after position p - 1
// (after the output norm), [enorm(embedding) | hnorm(hidden)] projected by eh_proj to the residual
// stream, then one gated attention layer and an FFN as the decoder's, its own output norm
// (shared_head_norm, else the model's) and the model's LM head: logits for the token at p + 1, and
// its own hidden state, which the next drafted position reads in place of the model's (llama.cpp's
// common_speculative_impl_draft_mtp, src/models/qwen35.cpp's graph_mtp).
//
// The block is loaded as a one-layer model from a view of the same file: its tensors renamed to
// layer 0, every decoder layer hidden, ModelSpec::nextn_head set (the forward's NextN input, the
// step's hidden inputs: runtime::SequenceStep::hidden_in).
#pragma once

#include <cstdint>

#include "engine/gguf/gguf_file.h"

namespace vkllm::model {

// The file's NextN blocks: nextn_predict_layers of a qwen35 / qwen35moe / qwen3next file (0
// without).
uint32_t nextn_block_count(const gguf::GgufFile& f);

// Edits `f` (an in-memory view; the file is never written) into the one-layer model of its first
// NextN block: that block's tensors as blk.0's, the other blocks hidden, its shared_head_norm /
// shared_head_head / embed_tokens in place of the model's output norm / output / token_embd where
// it has them, block_count 1, every layer attention. Throws std::runtime_error for a file without
// a NextN block or of another architecture.
void view_as_nextn_head(gguf::GgufFile& f);

}  // namespace vkllm::model
