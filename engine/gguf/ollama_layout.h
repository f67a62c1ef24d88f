// Load-time translation of GGUF files written by Ollama's own converter (many files in Ollama's
// library) into the layout llama.cpp's converter writes, which is the only one vkllm's loaders
// know. Ollama carries the same kind of layer (llama/compat in ollama/ollama); the markers here
// follow its handlers and its converter (convert/convert_*.go).
//
// A file is recognised by markers only Ollama's converter leaves; its view (GgufFile's metadata
// and tensor table) is then edited in memory: keys renamed or filled with the architecture's
// defaults, embedded tensors the text model does not use hidden, tokenizer arrays cut to the
// embedding rows. The file's bytes are never changed or copied. A file with no marker is left
// exactly as it is; one that carries a marker but lacks what the translation needs is refused
// with a LayoutError naming what is missing, rather than loaded with wrong settings.
//
// Handled today: llama (Llama 3 tokenizer metadata), gemma3 (text), EmbeddingGemma (published as
// gemma3 with dense.0 / dense.1), mistral3 (Ministral 3's older key names, embedded vision),
// qwen3moe (expert width from the tensors), gpt-oss (published as gptoss with its own tensor
// names), Qwen2.5-VL's text (published as qwen25vl, its RoPE sections as mrope_section),
// Qwen3-VL's text, gemma4 (text: its vocabulary's model name, the older per-expert scale name, the
// embedded vision and audio towers hidden), snowflake-arctic-embed2 (bert with its XLM-R
// tokenizer's charsmap as base64 text).
// The other architectures vkllm runs are written by Ollama's converter as by llama.cpp's (see
// docs/ollama-layouts.md). One file per family: ollama_layout.cpp (llama, mistral3, qwen3moe,
// qwen25vl, qwen3vl, gpt-oss, dispatch), ollama_layout_gemma.cpp (gemma3, EmbeddingGemma, gemma4),
// ollama_layout_bert.cpp;
// ollama_layout_edit.h holds what they share.
#pragma once

#include <stdexcept>

#include "engine/gguf/gguf_file.h"

namespace vkllm::gguf {

// Not a GgufError: the file is a well-formed GGUF, reading more of it changes nothing.
class LayoutError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Recognises an Ollama-converter layout and translates the view; records what it did in
// file.translation(). Adapters (general.type "adapter") are never translated. Throws LayoutError.
// Then split_stacked_experts().
void translate_known_layouts(GgufFile& file);

// Every layer's stacked experts `blk.N.ffn_gate_up_exps.weight` ([n_embd, 2 x n_ff_exp, n_expert]:
// each expert's gate rows, then its up rows; llama.cpp's converters write it for Gemma 4, Qwen3.5
// MoE, Qwen3-Next, ...) are seen as `ffn_gate_exps` and `ffn_up_exps` of [n_embd, n_ff_exp,
// n_expert]: two strided views of the one file extent (TensorInfo::expert_stride), so every
// architecture and backend reads them as split experts without a copy. Throws GgufError for a
// stacked tensor of another shape, or one beside a split gate or up tensor of its layer.
void split_stacked_experts(GgufFile& file);

}  // namespace vkllm::gguf
