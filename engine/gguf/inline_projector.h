// Vision towers inside the text GGUF. Ollama's converter writes some vision models as one file:
// the text model plus the tower and projector (v.* and mm.* tensors, <arch>.vision.* and
// <arch>.mm.* keys), where llama.cpp's converter writes a separate mmproj file. Ollama hands such a
// file to llama.cpp as its own mmproj and renames keys and tensors on load (llama/compat). Here the
// projector part of such a file becomes the mmproj GGUF llama.cpp's converter would have written,
// so the image encoders (engine/vision) read one layout. The text view of the same file
// (ollama_layout.h) hides these tensors.
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

// Ollama's converter's names for pieces of Gemma 3's tower tensors (Hugging Face's, under v. / mm.)
// and llama.cpp's, in the order they are tried (the first that a name holds is replaced). The
// Ollama-layout fixture maker applies them the other way round.
std::span<const std::pair<std::string_view, std::string_view>> gemma3_tower_renames();

// The architecture whose tower `raw` (a file read with ReadLayout::Raw) carries in a layout
// extract_inline_projector reads (gemma3 today), or "" when it carries none it reads.
std::string inline_projector_arch(const GgufFile& raw);

// Fills `out` with the bytes at `offset` of the file's data section.
using TensorBytesReader = std::function<void(uint64_t offset, std::span<uint8_t> out)>;

// The mmproj GGUF (clip.* metadata, llama.cpp's tensor names, only the v.* and mm.* tensors, their
// bytes unchanged) of the tower in `raw`, its tensor data read through `read`. Throws LayoutError
// (ollama_layout.h) naming what is missing when the file has no tower extract_inline_projector
// reads or lacks a key the tower needs.
std::vector<uint8_t> extract_inline_projector(const GgufFile& raw, const TensorBytesReader& read);

}  // namespace vkllm::gguf
