// Vision towers inside the text GGUF. Ollama's converter writes some vision models as one file:
// the text model plus the tower and projector (v.* and mm.* tensors, <arch>.vision.* and
// <arch>.mm.* keys), where llama.cpp's converter writes a separate mmproj file. Ollama hands such a
// file to llama.cpp as its own mmproj and renames keys and tensors on load (llama/compat). Here the
// projector part of such a file becomes the mmproj GGUF llama.cpp's converter would have written,
// so the image encoders (engine/vision) read one layout. The text view of the same file
// (ollama_layout.h) hides these tensors.
//
// Read today: gemma3 (SigLIP and Gemma 3's pooling projector) and mistral3 (Mistral Small 3.1 /
// Ministral 3: the Pixtral tower and patch merger, whose Q/K rows Ollama's converter leaves in
// Hugging Face's order and whose [IMG_BREAK] embedding is the text model's own token row) and
// qwen25vl (Qwen2.5-VL: the two frames' patch kernels and the merger renamed, the window pattern
// from its full-attention layers) and qwen3vl (Qwen3-VL: Hugging Face's names renamed, its Conv3D
// patch kernel as the two frames', Q/K/V fused again, the deepstack mergers by layer) and gemma4
// (Gemma 4's gemma4v tower: llama.cpp's names already, gemma4.vision.* keys; clamp bounds packed
// in v.clamp_data unpacked where a file lacks the scalars; the audio conformer, a.* and mm.a.*,
// left out).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/gguf/gguf_file.h"

namespace vkllm::gguf {

// Ollama's converter's names for pieces of `arch`'s tower tensors and llama.cpp's, in the order
// they are tried (the first that a name holds is replaced); empty for an architecture whose inline
// tower needs none (gemma4) or that vkllm does not read. The Ollama-layout fixture maker applies
// them the other way round.
std::span<const std::pair<std::string_view, std::string_view>> inline_tower_renames(
    std::string_view arch);

// Pixtral's vision Q/K rows (a weight's rows, a bias's values: `rows` of them, their bytes in
// `in`): Hugging Face's order keeps each head's two rotary halves apart, llama.cpp's converter
// interleaves them (its LlamaModel.permute), the order its 2D RoPE and vkllm's read. Writes them
// to `out` in llama.cpp's order, or back in Hugging Face's with `to_hf`. Whole rows move, so any
// tensor type works.
void permute_rope_rows(std::span<const uint8_t> in, std::span<uint8_t> out, uint64_t rows,
                       uint32_t n_head, bool to_hf);

// The token whose text embedding Pixtral puts after each row of image patches but the last: the
// vocabulary's [IMG_BREAK] (`tokens`: tokenizer.ggml.tokens), or 12 (Tekken's [IMG_BREAK], the id
// Ollama's own mistral3 engine always used) when it has none.
uint32_t img_break_token(const Value* tokens);

// The architecture whose tower `raw` (a file read with ReadLayout::Raw) carries in a layout
// extract_inline_projector reads (gemma3, gemma4, mistral3, qwen25vl, qwen3vl), or "" when it
// carries none it reads.
std::string inline_projector_arch(const GgufFile& raw);

// Fills `out` with the bytes at `offset` of the file's data section.
using TensorBytesReader = std::function<void(uint64_t offset, std::span<uint8_t> out)>;

// The mmproj GGUF (clip.* metadata, llama.cpp's tensor names, only the v.* and mm.* tensors, their
// bytes unchanged but for Pixtral's Q/K row order, and Pixtral's v.token_embd.img_break row made
// F32 from the text embeddings, as llama.cpp's converter writes it) of the tower in `raw`, its
// tensor data read through `read`. Throws LayoutError (ollama_layout.h) naming what is missing or
// unsupported when the file has no tower extract_inline_projector reads or lacks a key it needs.
std::vector<uint8_t> extract_inline_projector(const GgufFile& raw, const TensorBytesReader& read);

}  // namespace vkllm::gguf
