// A vocab-only GGUF of the Llama 3 (3.1/3.2) tokenizer built from the published encoder.json +
// vocab.bpe: the 128000 byte-level BPE tokens and their merges, plus the 256 special tokens at
// 128000-128255 with the ids, texts, types and bos/eos/eot ids the real models carry. Model
// fixtures (`vkllm dev make-vocab`, `vkllm dev make-model --vocab`) get a realistically shaped
// 128256-token vocabulary from it without shipping a model.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "engine/gguf/gguf_writer.h"

namespace vkllm::tokenizer {

inline constexpr int32_t kLlama3BpeTokens = 128000;
inline constexpr int32_t kLlama3VocabSize = 128256;

// Which special tokens fill ids 128000-128255: Llama 3's, or gpt-oss's Harmony ones
// (<|start|>, <|channel|>, <|message|>, <|constrain|>, <|end|>, <|call|>, <|return|>... as control
// tokens, <|return|> the EOS, no BOS added) for Harmony fixtures without o200k's 200k tokens.
enum class Llama3Specials { kLlama3, kHarmony };

// Declares the tokenizer.* (and general.*) metadata in `writer`. Throws std::runtime_error naming
// the file and what is wrong (unreadable, not JSON, id out of range, missing token id).
void add_llama3_vocab(const std::filesystem::path& encoder_json,
                      const std::filesystem::path& merges_bpe, gguf::GgufWriter& writer,
                      Llama3Specials specials = Llama3Specials::kLlama3);

// The whole vocab-only GGUF image.
std::vector<uint8_t> build_llama3_vocab_gguf(const std::filesystem::path& encoder_json,
                                             const std::filesystem::path& merges_bpe,
                                             Llama3Specials specials = Llama3Specials::kLlama3);

}  // namespace vkllm::tokenizer
