// `vkllm dev make-model --layout ollama`: the file Ollama's own converter (ollama/ollama
// convert/) writes for the same model, from the same random weights as the llama.cpp-layout
// fixture, so tests can check that the load-time translation (engine/gguf/ollama_layout.h) gives
// the same model.
#pragma once

#include <optional>
#include <string_view>

#include "engine/gguf/gguf_writer.h"

namespace vkllm::model {

struct MakeModelOptions;

enum class FileLayout { LlamaCpp, Ollama };

// "llama.cpp" or "ollama"; nullopt for anything else.
std::optional<FileLayout> file_layout_from_name(std::string_view name);

// Rewrites the llama.cpp-layout model that build_random_model declared in `w` (with the same
// options) into Ollama's layout:
//   llama  - a Llama 3 file as published before the pre-tokenizer key: no tokenizer.ggml.pre
//            nor add_bos_token, EOS on <|end_of_text|>, no EOT id, the instruct chat template.
//            Needs the Llama 3 vocabulary (`vkllm dev make-vocab`).
//   gemma3 - a multimodal size as Ollama's converter writes it: no RMS epsilon and no rope keys
//            (nor the 128k sizes' linear scaling), gemma3.vision.* / gemma3.mm.* keys, a small
//            random vision tower and projector (v.*, mm.* tensors), multimodal tokens past the
//            embedding rows, padding/unknown add flags, no chat template.
//   gemma-embedding - EmbeddingGemma as published: architecture gemma3 with gemma3.* keys (the
//            pooling type among them), dense.0 / dense.1 for dense_2 / dense_3 and no
//            dense_*_feat_* keys, the local rope base and per-layer window pattern as Ollama's
//            Gemma 3 converter writes them.
//   mistral3 - Ministral 3 before Ollama adopted llama.cpp's keys: rope.scaling.beta_fast /
//            beta_slow / mscale / mscale_all_dim and rope.scaling_beta, no pre-tokenizer, a
//            small random Pixtral tower and projector (v.*, mm.*; mistral3.vision.* keys).
//   gemma4 - one file as Ollama's converter writes it: gemma4.vision.* keys and the twin's gemma4v
//            tower (v.*, mm.*, clamp bounds also packed in v.clamp_data), per-layer widths and
//            K/V heads as one value or int32s, no vocab_size; a Gemma 4 vocabulary as "llama"
//            with pre-tokenizer "gemma4", control chat markers and normal byte tokens.
//   qwen3moe - no expert_feed_forward_length, norm_top_k_prob true.
//   bert   - with an XLM-R ("t5") vocabulary only: snowflake-arctic-embed2 as published, its
//            precompiled charsmap as base64 text, one character per string.
// The text weights keep their types and bytes (and names, but EmbeddingGemma's dense ones). Throws
// std::invalid_argument for other architectures or options the layout cannot express.
void rewrite_as_ollama_layout(const MakeModelOptions& options, gguf::GgufWriter& w);

}  // namespace vkllm::model
