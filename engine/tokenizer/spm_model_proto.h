// Builds the serialized SentencePiece ModelProto for a GGUF "llama" vocabulary, so the
// sentencepiece library can load it without a .model file. Debian ships no generated protobuf
// headers for it, and the few fields needed are written directly in protobuf wire format.
#pragma once

#include <string>

#include "engine/tokenizer/vocab.h"

namespace vkllm::tokenizer {

// A BPE model with the vocabulary's pieces, scores and types; byte fallback when all 256
// <0xXX> byte pieces exist. Normalization is off except space -> U+2581 (the caller adds the
// dummy-prefix space itself, as llama.cpp decides where it goes). Pieces SentencePiece would
// reject (empty or duplicate texts, extra unknown pieces) become unreachable control pieces, so
// ids stay aligned with the vocabulary.
std::string build_sentencepiece_model(const Vocab& vocab);

// The byte a "<0xXX>" piece stands for (upper-case hex, as SentencePiece writes them); -1 for any
// other text.
int byte_of_piece(const std::string& text);

}  // namespace vkllm::tokenizer
