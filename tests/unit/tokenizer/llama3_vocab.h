// Builds a Llama 3 (3.1/3.2) tokenizer GGUF from the shared encoder.json + vocab.bpe: the 128000
// byte-level BPE tokens and 280147 merges, plus the 256 special tokens at 128000-128255 with the
// ids, texts and types the published models carry. Used by the tests and the benchmark.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/gguf/gguf_writer.h"

namespace vkllm::tokenizer::testdata {

inline std::vector<uint8_t> build_llama3_vocab_gguf(const std::filesystem::path& dir) {
  std::ifstream encoder_file(dir / "encoder.json");
  if (!encoder_file) throw std::runtime_error("cannot read " + (dir / "encoder.json").string());
  const auto encoder = nlohmann::json::parse(encoder_file);
  constexpr int32_t kBpeTokens = 128000, kVocab = 128256;
  std::vector<std::string> tokens(kVocab);
  std::vector<int32_t> types(kVocab, 1);  // normal
  for (const auto& [text, id] : encoder.items()) {
    const int32_t i = id.get<int32_t>();
    if (i < 0 || i >= kBpeTokens) throw std::runtime_error("encoder.json: id out of range");
    tokens[static_cast<size_t>(i)] = text;
  }
  const char* named[] = {"<|begin_of_text|>",
                         "<|end_of_text|>",
                         "<|reserved_special_token_0|>",
                         "<|reserved_special_token_1|>",
                         "<|finetune_right_pad_id|>",
                         "<|reserved_special_token_2|>",
                         "<|start_header_id|>",
                         "<|end_header_id|>",
                         "<|eom_id|>",
                         "<|eot_id|>",
                         "<|python_tag|>"};
  int reserved = 3;
  for (int32_t id = kBpeTokens; id < kVocab; ++id) {
    const size_t k = static_cast<size_t>(id - kBpeTokens);
    tokens[static_cast<size_t>(id)] =
        k < std::size(named) ? named[k]
                             : "<|reserved_special_token_" + std::to_string(reserved++) + "|>";
    types[static_cast<size_t>(id)] = 3;  // control
  }
  std::ifstream merges_file(dir / "vocab.bpe");
  if (!merges_file) throw std::runtime_error("cannot read " + (dir / "vocab.bpe").string());
  std::vector<std::string> merges;
  for (std::string line; std::getline(merges_file, line);) {
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    merges.push_back(line);
  }
  gguf::GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string("general.name", "llama-bpe");
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", "llama-bpe");
  w.set_strings("tokenizer.ggml.tokens", tokens);
  w.set_i32s("tokenizer.ggml.token_type", types);
  w.set_strings("tokenizer.ggml.merges", merges);
  w.set_u32("tokenizer.ggml.bos_token_id", 128000);
  w.set_u32("tokenizer.ggml.eos_token_id", 128009);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  return w.serialize();
}

}  // namespace vkllm::tokenizer::testdata
