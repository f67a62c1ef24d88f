// Builds serialized SentencePiece ModelProtos from a GGUF vocabulary, so the sentencepiece
// library can load it without a .model file: the BPE model of a "llama" vocabulary, the
// normalizer of a "t5" (unigram) one. Debian ships no generated protobuf
// headers for it, and the few fields needed are written directly in protobuf wire format.
#pragma once

#include <string>
#include <vector>

#include "engine/tokenizer/vocab.h"

namespace vkllm::tokenizer {

// A BPE model with the vocabulary's pieces, scores and types; byte fallback when all 256
// <0xXX> byte pieces exist. Normalization is off except space -> U+2581 (the caller adds the
// dummy-prefix space itself, as llama.cpp decides where it goes). Pieces SentencePiece would
// reject (empty or duplicate texts, extra unknown pieces) become unreachable control pieces, so
// ids stay aligned with the vocabulary.
std::string build_sentencepiece_model(const Vocab& vocab);

// For a unigram ("t5") vocabulary: a model that only normalizes, with the vocabulary's
// precompiled charsmap and whitespace settings as llama.cpp's UGM tokenizer applies them. Its
// pieces are the vocabulary's user-defined ones (kept as they are, as the normalizer does) and
// the 256 bytes, which every other character falls back to, so encoding a text with it gives
// the normalized text piece by piece: piece_texts[id] is the text of piece `id`.
std::string build_unigram_normalizer_model(const Vocab& vocab,
                                           std::vector<std::string>& piece_texts);

// The byte a "<0xXX>" piece stands for (upper-case hex, as SentencePiece writes them); -1 for any
// other text.
int byte_of_piece(const std::string& text);

// The bytes a SentencePiece vocabulary's token stands for: a byte piece's byte, a user-defined
// piece's text as it is, any other with U+2581 read as a space.
std::string spm_piece_bytes(const Vocab& vocab, int32_t id);

}  // namespace vkllm::tokenizer
