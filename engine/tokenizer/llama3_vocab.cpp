#include "engine/tokenizer/llama3_vocab.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>
#include <string>

namespace vkllm::tokenizer {

namespace {

// llama.cpp's token types.
constexpr int32_t kNormal = 1, kControl = 3;

// The named special tokens in id order from 128000; the rest are reserved placeholders.
constexpr const char* kNamedSpecials[] = {"<|begin_of_text|>",
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
constexpr uint32_t kBosId = 128000, kEotId = 128009;
// o200k_harmony's (gpt-oss) named special tokens, in its order from <|startoftext|> with its
// reserved gaps left out; the generation ends at <|return|> (and <|call|>).
constexpr const char* kHarmonySpecials[] = {"<|startoftext|>", "<|endoftext|>", "<|return|>",
                                            "<|constrain|>",   "<|channel|>",   "<|start|>",
                                            "<|end|>",         "<|message|>",   "<|call|>"};
constexpr uint32_t kHarmonyReturnId = 128002;

std::ifstream open_input(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return in;
}

}  // namespace

void add_llama3_vocab(const std::filesystem::path& encoder_json,
                      const std::filesystem::path& merges_bpe, gguf::GgufWriter& w,
                      Llama3Specials specials) {
  const bool harmony = specials == Llama3Specials::kHarmony;
  std::ifstream encoder_file = open_input(encoder_json);
  const auto encoder = nlohmann::json::parse(encoder_file, nullptr, /*allow_exceptions=*/false);
  if (!encoder.is_object()) {
    throw std::runtime_error(encoder_json.string() + ": not a JSON object of token -> id");
  }
  std::vector<std::string> tokens(kLlama3VocabSize);
  std::vector<bool> seen(kLlama3BpeTokens, false);
  std::vector<int32_t> types(kLlama3VocabSize, kNormal);
  for (const auto& [text, id] : encoder.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= kLlama3BpeTokens) {
      throw std::runtime_error(encoder_json.string() + ": token '" + text + "' has id " +
                               id.dump() + ", outside 0.." + std::to_string(kLlama3BpeTokens - 1));
    }
    const auto i = static_cast<size_t>(id.get<int64_t>());
    tokens[i] = text;
    seen[i] = true;
  }
  for (size_t i = 0; i < seen.size(); ++i) {
    if (!seen[i]) {
      throw std::runtime_error(encoder_json.string() + ": no token has id " + std::to_string(i) +
                               " (Llama 3 has " + std::to_string(kLlama3BpeTokens) +
                               " BPE tokens)");
    }
  }
  int reserved = 3;  // reserved_special_token_0..2 are among the named ones
  for (int32_t id = kLlama3BpeTokens; id < kLlama3VocabSize; ++id) {
    const auto k = static_cast<size_t>(id - kLlama3BpeTokens);
    std::string& text = tokens[static_cast<size_t>(id)];
    if (harmony) {
      text = k < std::size(kHarmonySpecials) ? kHarmonySpecials[k]
                                             : "<|reserved_" + std::to_string(200000 + k) + "|>";
    } else {
      text = k < std::size(kNamedSpecials)
                 ? kNamedSpecials[k]
                 : "<|reserved_special_token_" + std::to_string(reserved++) + "|>";
    }
    types[static_cast<size_t>(id)] = kControl;
  }

  std::ifstream merges_file = open_input(merges_bpe);
  std::vector<std::string> merges;
  for (std::string line; std::getline(merges_file, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    if (line.find(' ') == std::string::npos) {
      throw std::runtime_error(merges_bpe.string() + ": merge " + std::to_string(merges.size()) +
                               " '" + line + "' is not two space-separated tokens");
    }
    merges.push_back(std::move(line));
  }
  if (merges.empty()) throw std::runtime_error(merges_bpe.string() + ": no merges");

  w.set_string("general.architecture", "llama");
  w.set_string("general.name", harmony ? "llama-bpe-harmony" : "llama-bpe");
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", "llama-bpe");
  w.set_strings("tokenizer.ggml.tokens", tokens);
  w.set_i32s("tokenizer.ggml.token_type", types);
  w.set_strings("tokenizer.ggml.merges", merges);
  // The instruct models' ids: generation ends at <|eot_id|>. Harmony's prompts start with
  // <|start|> and no BOS, and its generation ends at <|return|>.
  w.set_u32("tokenizer.ggml.bos_token_id", kBosId);
  w.set_u32("tokenizer.ggml.eos_token_id", harmony ? kHarmonyReturnId : kEotId);
  if (!harmony) w.set_u32("tokenizer.ggml.eot_token_id", kEotId);
  w.set_bool("tokenizer.ggml.add_bos_token", !harmony);
}

std::vector<uint8_t> build_llama3_vocab_gguf(const std::filesystem::path& encoder_json,
                                             const std::filesystem::path& merges_bpe,
                                             Llama3Specials specials) {
  gguf::GgufWriter w;
  add_llama3_vocab(encoder_json, merges_bpe, w, specials);
  return w.serialize();
}

}  // namespace vkllm::tokenizer
