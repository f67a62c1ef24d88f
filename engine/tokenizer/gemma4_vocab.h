// A small vocabulary shaped like Gemma 4's, as llama.cpp's converter writes it
// (tokenizer.ggml.model "gemma4"): SentencePiece-style BPE pieces (▁ for spaces) with merges
// learned from a built-in English text, the 256 <0xXX> byte tokens, newline-run tokens, and
// Gemma 4's special tokens with the types the converter gives them (<|channel>, <|tool_call>,
// <|tool_response>, <|"|> and their closers user-defined; <|turn>, <turn|>, <|think|>, <|tool>
// control). Fixtures (`vkllm dev make-vocab --kind gemma4`, then `make-model --arch gemma4
// --vocab`) exercise the gemma4 tokenizer with it; llama.cpp loads it unchanged.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/gguf/gguf_writer.h"

namespace vkllm::tokenizer {

// Declares the tokenizer.* (and general.*) metadata in `writer`. Deterministic: the same bytes
// every time.
void add_gemma4_test_vocab(gguf::GgufWriter& writer);

// The whole vocab-only GGUF image.
std::vector<uint8_t> build_gemma4_test_vocab_gguf();

}  // namespace vkllm::tokenizer
