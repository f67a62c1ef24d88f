#include "engine/tokenizer/gemma4_vocab.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "engine/tokenizer/utf8.h"

namespace vkllm::tokenizer {
namespace {

// GGUF token types.
constexpr int32_t kNormalType = 1, kUnknownType = 2, kControlType = 3, kUserDefinedType = 4,
                  kByteType = 6;
constexpr size_t kMergesLearned = 320;
constexpr std::string_view kSpace = "\xE2\x96\x81";  // ▁

// What the merges are learned from: plain English with a few accented and CJK characters, so that
// the vocabulary has pieces for them (other characters fall back to byte tokens).
constexpr std::string_view kTrainingText =
    "Once upon a time there was a little town by the sea. The people of the town were fishermen, "
    "and every morning they went out in their boats before the sun was up. In the evening they "
    "came back with their nets full of fish, and the children ran down to the water to meet "
    "them. One day a stranger came to the town. He said that he had walked for a long time, "
    "from a country on the other side of the mountains, and that he was looking for the house "
    "of his father. Nobody in the town knew him, but they gave him bread and water and a place "
    "to sleep. The next morning he went down to the sea with the fishermen, and he worked with "
    "them until the evening. He was strong and he did not talk very much. The children liked "
    "him because he told them stories about the cities he had seen: cities with towers of "
    "glass, streets full of people, and trains that went faster than the wind. What is the "
    "weather like today? It is warm and sunny, with a light wind from the west. Please write a "
    "short function that returns the sum of two numbers. The model thinks before it answers, "
    "and it calls a tool when it needs one: get_weather(city) returns the temperature in "
    "degrees. 1, 2, 3, 10, 20, 100, 2024, 3.14. \"Hello,\" she said, \"how are you?\" I'm "
    "fine, thank you. We'll see; they're here. café, naïve, résumé, über, Zürich, São Paulo. "
    "日本語 日本 東京.";

std::vector<std::string> characters(std::string_view s) {
  std::vector<std::string> out;
  for (size_t pos = 0; pos < s.size();) {
    const size_t n = std::min(utf8::sequence_length(static_cast<uint8_t>(s[pos])), s.size() - pos);
    out.emplace_back(s.substr(pos, n));
    pos += n;
  }
  return out;
}

// SentencePiece-style training words: the text with spaces as ▁, cut before every ▁.
std::map<std::string, int> training_words() {
  std::string escaped;
  for (char c : kTrainingText) {
    if (c == ' ') {
      escaped.append(kSpace);
    } else {
      escaped.push_back(c);
    }
  }
  std::map<std::string, int> words;
  size_t start = 0;
  for (size_t pos = kSpace.size(); pos <= escaped.size(); ++pos) {
    if (pos == escaped.size() || escaped.compare(pos, kSpace.size(), kSpace) == 0) {
      ++words[escaped.substr(start, pos - start)];
      start = pos;
    }
  }
  return words;
}

// Byte-pair merges learned the textbook way: the most frequent adjacent pair (the smallest pair on
// ties, for determinism) until kMergesLearned or no pair occurs twice.
std::vector<std::pair<std::string, std::string>> learn_merges(
    const std::map<std::string, int>& words) {
  std::vector<std::pair<std::vector<std::string>, int>> split;
  for (const auto& [w, n] : words) split.emplace_back(characters(w), n);
  std::vector<std::pair<std::string, std::string>> merges;
  while (merges.size() < kMergesLearned) {
    std::map<std::pair<std::string, std::string>, int> counts;
    for (const auto& [syms, n] : split) {
      for (size_t i = 0; i + 1 < syms.size(); ++i) counts[{syms[i], syms[i + 1]}] += n;
    }
    auto best = counts.end();
    for (auto it = counts.begin(); it != counts.end(); ++it) {
      if (best == counts.end() || it->second > best->second) best = it;
    }
    if (best == counts.end() || best->second < 2) break;
    const auto [left, right] = best->first;
    merges.emplace_back(left, right);
    for (auto& [syms, n] : split) {
      std::vector<std::string> merged;
      for (size_t i = 0; i < syms.size(); ++i) {
        if (i + 1 < syms.size() && syms[i] == left && syms[i + 1] == right) {
          merged.push_back(left + right);
          ++i;
        } else {
          merged.push_back(syms[i]);
        }
      }
      syms = std::move(merged);
    }
  }
  return merges;
}

}  // namespace

void add_gemma4_test_vocab(gguf::GgufWriter& w) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<float> scores;
  auto add = [&](std::string text, int32_t type) {
    tokens.push_back(std::move(text));
    types.push_back(type);
    scores.push_back(type == kNormalType ? -static_cast<float>(tokens.size()) : 0.0f);
  };
  // Gemma's first ids, then Gemma 4's chat tokens; "</s>" is in Gemma's vocabulary too, and
  // llama.cpp has to keep it from ending generation.
  add("<pad>", kControlType);
  add("<eos>", kControlType);
  add("<bos>", kControlType);
  add("<unk>", kUnknownType);
  add("<mask>", kControlType);
  add("</s>", kControlType);
  for (const char* t : {"<|turn>", "<turn|>", "<|think|>", "<|tool>", "<tool|>", "<unused0>"}) {
    add(t, kControlType);
  }
  for (const char* t : {"<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>",
                        "<|tool_response>", "<tool_response|>", "<|\"|>"}) {
    add(t, kUserDefinedType);
  }
  // Newline runs are tokens of their own; only "\n\n" is reachable by a merge.
  for (const char* t : {"\n", "\n\n", "\n\n\n", "\t"}) add(t, kNormalType);
  for (int b = 0; b < 256; ++b) {
    char text[7];
    std::snprintf(text, sizeof(text), "<0x%02X>", b);
    add(text, kByteType);
  }
  const auto words = training_words();
  std::set<std::string> alphabet;
  for (const auto& [word, n] : words) {
    for (std::string& c : characters(word)) alphabet.insert(std::move(c));
  }
  for (const std::string& c : alphabet) add(c, kNormalType);
  auto merges = learn_merges(words);
  // Runs of spaces, as Gemma's vocabulary has them.
  merges.emplace_back("\n", "\n");
  merges.emplace_back(std::string(kSpace), std::string(kSpace));
  merges.emplace_back(std::string(kSpace) + std::string(kSpace),
                      std::string(kSpace) + std::string(kSpace));
  std::set<std::string> have(tokens.begin(), tokens.end());
  std::vector<std::string> merge_lines;
  for (const auto& [left, right] : merges) {
    merge_lines.push_back(left + " " + right);
    if (have.insert(left + right).second) add(left + right, kNormalType);
  }

  w.set_string("general.architecture", "gemma4");
  w.set_string("general.name", "gemma4-test-vocab");
  w.set_string("tokenizer.ggml.model", "gemma4");
  w.set_strings("tokenizer.ggml.tokens", tokens);
  w.set_f32s("tokenizer.ggml.scores", scores);
  w.set_i32s("tokenizer.ggml.token_type", types);
  w.set_strings("tokenizer.ggml.merges", merge_lines);
  w.set_u32("tokenizer.ggml.bos_token_id", 2);
  w.set_u32("tokenizer.ggml.eos_token_id", 1);
  w.set_u32("tokenizer.ggml.unknown_token_id", 3);
  w.set_u32("tokenizer.ggml.padding_token_id", 0);
  w.set_bool("tokenizer.ggml.add_space_prefix", false);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
}

std::vector<uint8_t> build_gemma4_test_vocab_gguf() {
  gguf::GgufWriter w;
  add_gemma4_test_vocab(w);
  return w.serialize();
}

}  // namespace vkllm::tokenizer
