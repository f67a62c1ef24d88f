#include "engine/tokenizer/vocab.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>
#include <variant>

#include "engine/tokenizer/tokenizer_error.h"

namespace vkllm::tokenizer {
namespace {

// Token texts that end a turn in the chat formats llama.cpp knows; any token with one of these
// texts stops generation, as in llama.cpp (the id keys alone miss e.g. Llama 3's <|eom_id|>).
constexpr std::string_view kEndOfGenerationTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<end_of_turn>",
    "<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>",
    "</s>",
    // Gemma 4: its EOS, the end of a turn, and the model's turn ending after a tool call.
    "<eos>", "<turn|>", "<|tool_response>"};
constexpr std::string_view kEndOfTurnTexts[] = {
    "<|eot_id|>",        "<|im_end|>", "<|end|>", "<end_of_turn>",
    "<|endoftext|>",     "<EOT>",      "_<EOT>",  "<｜end▁of▁sentence｜>",
    "<end_of_utterance>"};

// Gemma 4's markers of thinking, tool calls and their results, and its string quote.
constexpr std::string_view kGemma4VisibleTexts[] = {
    "<|channel>",       "<channel|>",       "<|tool_call>", "<tool_call|>",
    "<|tool_response>", "<tool_response|>", "<|\"|>"};

// Pre-tokenizers after which llama.cpp adds BOS by default (the Llama 3 family).
constexpr std::string_view kAddBosPre[] = {"llama3",    "llama-v3", "llama-bpe", "falcon3",
                                           "falcon-h1", "pixtral",  "midm-2.0",  "lfm2"};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A special id from metadata, or the default; ids outside the vocabulary are ignored (llama.cpp
// does the same: some published GGUFs carry stale ids).
int32_t special_id(const gguf::GgufFile& f, std::string_view key, int32_t fallback,
                   int32_t n_vocab) {
  auto v = f.get_optional<int64_t>(key);
  int64_t id = v ? *v : fallback;
  if (id < 0 || id >= n_vocab) id = (fallback >= 0 && fallback < n_vocab) ? fallback : -1;
  return static_cast<int32_t>(id);
}

// tokenizer.ggml.precompiled_charsmap as bytes: llama.cpp's converter writes an array of u8 (or
// i8). Ollama's snowflake-arctic-embed2 holds it as base64 text, one character per string; the
// file's load-time translation (engine/gguf/ollama_layout.h) turns that into bytes first.
std::string charsmap_bytes(const gguf::GgufFile& f) {
  constexpr std::string_view kKey = "tokenizer.ggml.precompiled_charsmap";
  const gguf::Value* v = f.find(kKey);
  if (!v) return {};
  const auto* a = std::get_if<std::shared_ptr<gguf::Array>>(&v->v);
  if (!a ||
      ((*a)->element_type != gguf::ValueType::U8 && (*a)->element_type != gguf::ValueType::I8)) {
    throw TokenizerError("tokenizer: " + std::string(kKey) + " is " +
                         (a ? "an array of " + gguf::value_type_name((*a)->element_type)
                            : gguf::value_type_name(v->type())) +
                         ", not an array of bytes");
  }
  std::string out;
  out.reserve((*a)->items.size());
  for (const gguf::Value& item : (*a)->items) {
    if (const auto* u = std::get_if<uint8_t>(&item.v)) {
      out.push_back(static_cast<char>(*u));
    } else {
      out.push_back(static_cast<char>(std::get<int8_t>(item.v)));
    }
  }
  // Its first four bytes give the size of the compiled trie that follows; the replacement
  // strings come after it.
  uint32_t trie_size = 0;
  if (out.size() >= 4) std::memcpy(&trie_size, out.data(), 4);
  if (out.size() < 4 || uint64_t{trie_size} + 4 >= out.size()) {
    throw TokenizerError("tokenizer: " + std::string(kKey) + " is truncated (" +
                         std::to_string(out.size()) + " bytes)");
  }
  return out;
}

}  // namespace

int32_t Vocab::find(std::string_view t) const {
  auto it = token_to_id.find(t);
  return it == token_to_id.end() ? -1 : it->second;
}

Vocab Vocab::from_gguf(const gguf::GgufFile& f) {
  Vocab v;
  auto model = f.get_optional<std::string>("tokenizer.ggml.model");
  if (!model) throw TokenizerError("tokenizer: GGUF has no tokenizer.ggml.model");
  v.model = *model;
  if (v.model == "llama") {
    v.kind = VocabKind::kSpm;
  } else if (v.model == "gpt2") {
    v.kind = VocabKind::kBpe;
  } else if (v.model == "bert") {
    v.kind = VocabKind::kWordPiece;
  } else if (v.model == "t5") {
    v.kind = VocabKind::kUnigram;
  } else if (v.model == "gemma4") {
    v.kind = VocabKind::kSpmBpe;
  } else {
    throw TokenizerError("tokenizer: unsupported tokenizer.ggml.model '" + v.model +
                         "' (supported: llama, gpt2, bert, t5, gemma4)");
  }
  v.pre = f.get_optional<std::string>("tokenizer.ggml.pre").value_or("default");
  // Ollama's converter writes Gemma 4's vocabulary as "llama" with pre-tokenizer "gemma4" (and the
  // merges); its runner tokenizes it as this BPE, not as SentencePiece's score-driven one.
  if (v.model == "llama" && v.pre == "gemma4") v.kind = VocabKind::kSpmBpe;
  // The model fixes the pre-tokenizer whatever the file says (llama.cpp's converter writes none).
  if (v.kind == VocabKind::kSpmBpe) v.pre = "gemma4";
  if (!f.has("tokenizer.ggml.tokens"))
    throw TokenizerError("tokenizer: GGUF has no tokenizer.ggml.tokens");
  v.tokens = f.get_array<std::string>("tokenizer.ggml.tokens");
  if (v.tokens.empty()) throw TokenizerError("tokenizer: tokenizer.ggml.tokens is empty");
  if (v.tokens.size() > static_cast<size_t>(INT32_MAX)) {
    throw TokenizerError("tokenizer: tokenizer.ggml.tokens has too many entries");
  }
  const size_t n = v.tokens.size();
  const auto n_vocab = static_cast<int32_t>(n);

  v.types.assign(n, TokenType::kNormal);
  if (f.has("tokenizer.ggml.token_type")) {
    auto types = f.get_array<int32_t>("tokenizer.ggml.token_type");
    if (types.size() != n) {
      throw TokenizerError("tokenizer: tokenizer.ggml.token_type has " +
                           std::to_string(types.size()) + " entries, tokenizer.ggml.tokens has " +
                           std::to_string(n));
    }
    for (size_t i = 0; i < n; ++i) {
      const int32_t t = types[i];
      v.types[i] = (t >= 0 && t <= 6) ? static_cast<TokenType>(t) : TokenType::kNormal;
      if (v.types[i] == TokenType::kUndefined) v.types[i] = TokenType::kNormal;
    }
  }
  if (f.has("tokenizer.ggml.scores")) {
    v.scores = f.get_array<float>("tokenizer.ggml.scores");
    if (v.scores.size() != n) {
      throw TokenizerError("tokenizer: tokenizer.ggml.scores has " +
                           std::to_string(v.scores.size()) +
                           " entries, tokenizer.ggml.tokens has " + std::to_string(n));
    }
  }
  v.token_to_id.reserve(n);
  for (size_t i = 0; i < n; ++i) v.token_to_id.emplace(v.tokens[i], static_cast<int32_t>(i));

  // llama.cpp's defaults per model type, then the metadata's overrides.
  int32_t def_bos = -1, def_eos = -1, def_unk = -1, def_sep = -1, def_pad = -1, def_cls = -1,
          def_mask = -1;
  bool def_add_bos = false, def_add_eos = false;
  switch (v.kind) {
    case VocabKind::kSpm:
      def_bos = 1, def_eos = 2, def_unk = 0, def_add_bos = true;
      break;
    case VocabKind::kBpe:
      def_bos = 11, def_eos = 11;
      def_add_bos =
          std::find(std::begin(kAddBosPre), std::end(kAddBosPre), v.pre) != std::end(kAddBosPre);
      break;
    case VocabKind::kWordPiece:
      def_unk = 100, def_cls = 101, def_sep = 102, def_pad = 0, def_mask = 103;
      def_add_bos = true, def_add_eos = true;
      break;
    case VocabKind::kUnigram:  // T5's: no BOS, </s> after the text
      def_eos = 1, def_unk = 2, def_pad = 0, def_add_eos = true;
      break;
    case VocabKind::kSpmBpe:  // every id from the file
      def_add_bos = true;
      break;
  }
  v.unk = special_id(f, "tokenizer.ggml.unknown_token_id", def_unk, n_vocab);
  v.sep = special_id(f, "tokenizer.ggml.seperator_token_id", def_sep, n_vocab);
  v.pad = special_id(f, "tokenizer.ggml.padding_token_id", def_pad, n_vocab);
  v.cls = special_id(f, "tokenizer.ggml.cls_token_id", def_cls, n_vocab);
  v.mask = special_id(f, "tokenizer.ggml.mask_token_id", def_mask, n_vocab);
  if (v.kind == VocabKind::kWordPiece) {
    // BERT's sequence is [CLS] text [SEP]: CLS plays BOS, SEP plays EOS.
    def_bos = v.cls;
    def_eos = v.sep;
  }
  v.bos = special_id(f, "tokenizer.ggml.bos_token_id", def_bos, n_vocab);
  v.eos = special_id(f, "tokenizer.ggml.eos_token_id", def_eos, n_vocab);
  v.eot = special_id(f, "tokenizer.ggml.eot_token_id", -1, n_vocab);
  v.eom = special_id(f, "tokenizer.ggml.eom_token_id", -1, n_vocab);
  v.add_bos = f.get_optional<bool>("tokenizer.ggml.add_bos_token").value_or(def_add_bos);
  auto add_eos = f.get_optional<bool>("tokenizer.ggml.add_eos_token");
  if (!add_eos && v.kind == VocabKind::kWordPiece) {
    add_eos = f.get_optional<bool>("tokenizer.ggml.add_sep_token");
  }
  v.add_eos = add_eos.value_or(def_add_eos);
  // Gemma 4 needs its BOS: llama.cpp adds it even where the file says not to.
  if (v.kind == VocabKind::kSpmBpe) v.add_bos = true;
  if (v.add_bos && v.bos < 0) v.add_bos = false;
  if (v.add_eos && v.eos < 0) v.add_eos = false;
  v.add_space_prefix =
      v.kind != VocabKind::kSpmBpe && f.get_optional<bool>("tokenizer.ggml.add_space_prefix")
                                          .value_or(v.kind != VocabKind::kUnigram);
  if (v.kind == VocabKind::kUnigram) {
    v.remove_extra_whitespaces =
        f.get_optional<bool>("tokenizer.ggml.remove_extra_whitespaces").value_or(false);
    v.precompiled_charsmap = charsmap_bytes(f);
  }

  if (v.kind == VocabKind::kSpmBpe) {
    // Gemma 4's chat markers always render, so that the chat parser reads them: llama.cpp's
    // converter makes them user-defined; Ollama's leaves them control tokens, and its runner
    // renders every token.
    for (std::string_view t : kGemma4VisibleTexts) {
      if (int32_t id = v.find(t); id >= 0 && v.type(id) == TokenType::kControl) {
        v.types[static_cast<size_t>(id)] = TokenType::kUserDefined;
      }
    }
  }

  if (v.eot < 0) {
    for (std::string_view t : kEndOfTurnTexts) {
      if (int32_t id = v.find(t); id >= 0) {
        v.eot = id;
        break;
      }
    }
  }
  if (v.eom < 0) v.eom = v.find("<|eom_id|>");
  for (int32_t id : {v.eos, v.eot, v.eom}) {
    if (id >= 0) v.end_of_generation.push_back(id);
  }
  for (std::string_view t : kEndOfGenerationTexts) {
    if (int32_t id = v.find(t); id >= 0) {
      v.end_of_generation.push_back(id);
      // llama.cpp makes these texts control tokens whatever the GGUF says (Phi-3 lists "</s>" as
      // user-defined): without parse_special they stay plain text, and they render as nothing.
      TokenType& type = v.types[static_cast<size_t>(id)];
      if (type == TokenType::kNormal || type == TokenType::kUserDefined) type = TokenType::kControl;
    }
  }
  std::sort(v.end_of_generation.begin(), v.end_of_generation.end());
  v.end_of_generation.erase(std::unique(v.end_of_generation.begin(), v.end_of_generation.end()),
                            v.end_of_generation.end());
  // Harmony (gpt-oss's o200k_harmony): <|end|> closes a message, not the turn; the model stops at
  // <|return|> or <|call|>. As llama.cpp: with both present, <|end|> leaves the end-of-generation
  // set and becomes a user-defined token.
  const auto is_eog = [&](std::string_view t) {
    const int32_t id = v.find(t);
    return id >= 0 &&
           std::binary_search(v.end_of_generation.begin(), v.end_of_generation.end(), id);
  };
  if (is_eog("<|return|>") && is_eog("<|call|>") && is_eog("<|end|>")) {
    const int32_t end = v.find("<|end|>");
    std::erase(v.end_of_generation, end);
    v.types[static_cast<size_t>(end)] = TokenType::kUserDefined;
  }

  // Gemma 4 has a "</s>" that is no end of anything: as llama.cpp, a vocabulary that ends turns
  // with <|tool_response> keeps </s> as a normal token (not split out of text, not a stop).
  if (is_eog("<|tool_response>") && is_eog("</s>")) {
    const int32_t s = v.find("</s>");
    std::erase(v.end_of_generation, s);
    v.types[static_cast<size_t>(s)] = TokenType::kNormal;
  }

  for (int32_t id = 0; id < n_vocab; ++id) {
    const TokenType t = v.type(id);
    if ((t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown) &&
        !v.text(id).empty()) {
      v.special_tokens.push_back(id);
    }
  }
  std::stable_sort(v.special_tokens.begin(), v.special_tokens.end(),
                   [&](int32_t a, int32_t b) { return v.text(a).size() > v.text(b).size(); });

  v.lstrip.assign(n, false);
  v.rstrip.assign(n, false);
  // Phi-3's added tokens swallow the whitespace that follows them (llama.cpp keys this on the
  // model name; the GGUF has no attribute for it).
  const std::string name = lower(f.get_optional<std::string>("general.name").value_or(""));
  if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
    for (int32_t id : v.special_tokens) v.rstrip[static_cast<size_t>(id)] = true;
    if (int32_t id = v.find("</s>"); id >= 0) v.rstrip[static_cast<size_t>(id)] = true;
    for (std::string_view t : {"<unk>", "<s>", "<|endoftext|>"}) {
      if (int32_t id = v.find(t); id >= 0) v.rstrip[static_cast<size_t>(id)] = false;
    }
  }
  return v;
}

}  // namespace vkllm::tokenizer
