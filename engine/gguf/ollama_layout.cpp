#include "engine/gguf/ollama_layout.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace vkllm::gguf {

namespace {

const std::string* string_value(const GgufFile& f, std::string_view key) {
  const Value* v = f.find(key);
  return v ? std::get_if<std::string>(&v->v) : nullptr;
}

const Array* array_value(const GgufFile& f, std::string_view key) {
  const Value* v = f.find(key);
  const auto* a = v ? std::get_if<std::shared_ptr<Array>>(&v->v) : nullptr;
  return a ? a->get() : nullptr;
}

// Item `index` of the token list, or "" (read in place: the list can hold 262k strings).
std::string_view token_at(const GgufFile& f, size_t index) {
  const Array* tokens = array_value(f, "tokenizer.ggml.tokens");
  if (!tokens || index >= tokens->items.size()) return {};
  const auto* s = std::get_if<std::string>(&tokens->items[index].v);
  return s ? std::string_view(*s) : std::string_view();
}

bool contains(const std::string* s, std::string_view needle) {
  return s && s->find(needle) != std::string::npos;
}

bool any_tensor_with_prefix(const GgufFile& f, std::string_view prefix) {
  return std::any_of(f.tensors().begin(), f.tensors().end(),
                     [&](const TensorInfo& t) { return t.name.starts_with(prefix); });
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::string number(double v) {
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s;
}

// Edits the view and notes each change for translation().changes.
class Translation {
 public:
  Translation(GgufFile& f, std::string name, std::vector<std::string> markers)
      : f_(f), name_(std::move(name)), markers_(std::move(markers)) {}

  [[noreturn]] void refuse(const std::string& what) const {
    throw LayoutError("model file looks like Ollama's " + name_ + " layout (" + join(markers_) +
                      ") but cannot be translated to llama.cpp's: " + what);
  }

  void set(const std::string& key, Value v, const std::string& why) {
    f_.set_value(key, std::move(v));
    changes_.push_back(key + " = " + why);
  }
  void set_default_f32(const std::string& key, float v) {
    if (!f_.has(key)) set(key, Value{v}, number(v) + " (default, missing)");
  }
  // A nested key Ollama's converter wrote, moved to llama.cpp's flat name.
  void move_f32(const std::string& from, const std::string& to) {
    const auto value = f_.get_optional<float>(from);
    if (!value) return;
    if (const auto flat = f_.get_optional<float>(to); flat && *flat != *value) {
      refuse(from + " (" + number(*value) + ") and " + to + " (" + number(*flat) + ") disagree");
    }
    f_.set_value(to, Value{*value});
    f_.erase_key(from);
    changes_.push_back(to + " = " + number(*value) + " (from " + from + ")");
  }
  void erase_keys_with_prefix(const std::string& prefix) {
    std::vector<std::string> keys;
    for (std::string_view k : f_.metadata_keys()) {
      if (k.starts_with(prefix)) keys.emplace_back(k);
    }
    for (const auto& k : keys) f_.erase_key(k);
    if (!keys.empty()) {
      changes_.push_back("hid " + std::to_string(keys.size()) + " " + prefix + "* keys");
    }
  }
  void hide_tensors_with_prefix(std::string_view prefix) {
    std::vector<std::string> names;
    for (const auto& t : f_.tensors()) {
      if (t.name.starts_with(prefix)) names.push_back(t.name);
    }
    for (const auto& n : names) f_.hide_tensor(n);
    if (!names.empty()) {
      changes_.push_back("hid " + std::to_string(names.size()) + " " + std::string(prefix) +
                         "* tensors");
    }
  }
  // Cuts the tokenizer's per-token arrays to `rows` entries.
  void truncate_vocab(size_t rows) {
    const Array* tokens = array_value(f_, "tokenizer.ggml.tokens");
    if (!tokens) refuse("it has no tokenizer.ggml.tokens array");
    const size_t n = tokens->items.size();
    if (n < rows) {
      refuse("tokenizer.ggml.tokens has " + std::to_string(n) + " entries, fewer than the " +
             std::to_string(rows) + " rows of token_embd.weight");
    }
    for (const char* key : {"tokenizer.ggml.scores", "tokenizer.ggml.token_type"}) {
      const Array* a = array_value(f_, key);
      if (a && a->items.size() != n) {
        refuse(std::string(key) + " has " + std::to_string(a->items.size()) +
               " entries, tokenizer.ggml.tokens " + std::to_string(n));
      }
    }
    if (n == rows) return;
    for (const char* key :
         {"tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type"}) {
      const Array* a = array_value(f_, key);
      if (!a) continue;
      auto cut = std::make_shared<Array>();
      cut->element_type = a->element_type;
      cut->items.assign(a->items.begin(), a->items.begin() + static_cast<std::ptrdiff_t>(rows));
      f_.set_value(key, Value{std::move(cut)});
    }
    changes_.push_back("tokenizer arrays cut from " + std::to_string(n) + " to the " +
                       std::to_string(rows) + " embedding rows");
  }

  void finish() {
    LayoutTranslation& t = f_.mutable_translation();
    t.name = "ollama-" + name_;
    t.changes = {"recognised by " + join(markers_)};
    t.changes.insert(t.changes.end(), changes_.begin(), changes_.end());
  }

  GgufFile& file() { return f_; }

 private:
  GgufFile& f_;
  std::string name_;
  std::vector<std::string> markers_;
  std::vector<std::string> changes_;
};

// gemma3 as Ollama's converter wrote the published 1B/4B/12B/27B: the vision tower and projector
// (v.*, mm.* tensors; gemma3.vision.*, gemma3.mm.* keys) in the text file; no RMS epsilon; rope
// bases either absent (multimodal sizes) or under nested names (1B); no linear rope scaling for
// the 128k-context sizes; tokenizer arrays that keep multimodal tokens past the embedding rows.
// The RMSNorm weights already carry Gemma's +1, as llama.cpp's converter writes them.
void translate_gemma3(GgufFile& f) {
  std::vector<std::string> markers;
  if (f.has("gemma3.mm.tokens_per_image")) markers.emplace_back("gemma3.mm.tokens_per_image");
  if (any_tensor_with_prefix(f, "v.")) markers.emplace_back("v.* tensors");
  if (any_tensor_with_prefix(f, "mm.")) markers.emplace_back("mm.* tensors");
  for (const char* key : {"gemma3.rope.global.freq_base", "gemma3.rope.local.freq_base",
                          "tokenizer.ggml.add_padding_token", "tokenizer.ggml.add_unknown_token"}) {
    if (f.has(key)) markers.emplace_back(key);
  }
  // Every published file also lacks the RMS epsilon, but that alone is no marker (Ollama's layer
  // takes it as one): files made by hand or by other tools omit it too, and the loaders' default
  // is the value the translation would fill in.
  if (markers.empty()) return;
  if (!f.has("gemma3.attention.layer_norm_rms_epsilon")) {
    markers.emplace_back("no gemma3.attention.layer_norm_rms_epsilon");
  }
  Translation t(f, "gemma3", std::move(markers));
  if (f.find_tensor("dense.0.weight")) {
    t.refuse("it is EmbeddingGemma (dense.0.weight), whose Ollama layout is not supported yet");
  }
  const TensorInfo* embd = f.find_tensor("token_embd.weight");
  if (!embd || embd->shape.size() != 2) t.refuse("it has no 2-D token_embd.weight tensor");
  const auto context = f.get_optional<uint32_t>("gemma3.context_length");
  if (!context) t.refuse("gemma3.context_length is missing");

  t.move_f32("gemma3.rope.global.freq_base", "gemma3.rope.freq_base");
  t.move_f32("gemma3.rope.local.freq_base", "gemma3.rope.freq_base_swa");
  t.set_default_f32("gemma3.attention.layer_norm_rms_epsilon", 1e-6f);
  t.set_default_f32("gemma3.rope.freq_base", 1000000.0f);
  // The 4B/12B/27B stretch a 16k training context to 128k with linear scaling 8 (their HF
  // config); the 1B (32k) has none.
  if (*context >= 131072 && !f.has("gemma3.rope.scaling.type")) {
    t.set("gemma3.rope.scaling.type", Value{std::string("linear")},
          "linear (the 128k-context sizes' scaling, missing)");
    t.set("gemma3.rope.scaling.factor", Value{8.0f}, "8 (likewise)");
  }
  t.truncate_vocab(static_cast<size_t>(embd->shape[1]));
  // The text view carries no vision keys or tensors (llama.cpp keeps them in a separate mmproj
  // file), so nothing reports a vision capability the text loader cannot serve.
  t.hide_tensors_with_prefix("v.");
  t.hide_tensors_with_prefix("mm.");
  t.erase_keys_with_prefix("gemma3.vision.");
  t.erase_keys_with_prefix("gemma3.mm.");
  t.finish();
}

// Llama 3 files whose tokenizer metadata predates llama.cpp's pre-tokenizer key: no (or
// "default") tokenizer.ggml.pre, no add_bos_token, EOS/EOT on <|end_of_text|>, so the text would
// be split with the wrong pre-tokenizer, without BOS, and instruct turns would not end. Recognised
// by the missing pre-tokenizer on a Llama 3 vocabulary (<|eot_id|> at 128009 and Llama 3's turn
// header in the vocabulary or chat template). Unlike Ollama's layer, an EOS of 128001 alone is no
// marker: it is what llama.cpp's converter writes for the base models.
void translate_llama3(GgufFile& f) {
  const std::string* pre = string_value(f, "tokenizer.ggml.pre");
  if (pre && !pre->empty() && *pre != "default") return;
  const std::string* chat_template = string_value(f, "tokenizer.chat_template");
  const bool template_markers =
      contains(chat_template, "<|start_header_id|>") || contains(chat_template, "<|eot_id|>");
  const bool eot_at_128009 = token_at(f, 128009) == "<|eot_id|>";
  const bool header_at_128006 = token_at(f, 128006) == "<|start_header_id|>";
  std::vector<std::string> markers{pre ? "tokenizer.ggml.pre '" + *pre + "'"
                                       : "no tokenizer.ggml.pre"};
  if (eot_at_128009) markers.emplace_back("<|eot_id|> at 128009");
  if (header_at_128006) markers.emplace_back("<|start_header_id|> at 128006");
  if (template_markers) markers.emplace_back("Llama 3 chat template");
  if (!eot_at_128009) {
    if (!template_markers) return;  // some other llama-architecture vocabulary
    const Array* tokens = array_value(f, "tokenizer.ggml.tokens");
    const size_t n = tokens ? tokens->items.size() : 0;
    Translation(f, "llama3", std::move(markers))
        .refuse(n > 128009 ? "token 128009 is '" + std::string(token_at(f, 128009)) +
                                 "', not <|eot_id|>: the vocabulary is not Llama 3's"
                           : "the vocabulary has " + std::to_string(n) +
                                 " tokens, no <|eot_id|> at 128009: it is not Llama 3's");
  }
  if (!header_at_128006 && !template_markers) return;
  Translation t(f, "llama3", std::move(markers));
  const std::string* model = string_value(f, "tokenizer.ggml.model");
  if (!model || *model != "gpt2") {
    t.refuse("tokenizer.ggml.model is " + (model ? "'" + *model + "'" : std::string("missing")) +
             ", Llama 3's is gpt2");
  }
  t.set("tokenizer.ggml.pre", Value{std::string("llama-bpe")}, "llama-bpe");
  if (!f.has("tokenizer.ggml.add_bos_token")) {
    t.set("tokenizer.ggml.add_bos_token", Value{true}, "true (Llama 3's, missing)");
  }
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id"}) {
    const auto id = f.get_optional<int64_t>(key);
    if (!id || *id == 128001) {
      t.set(key, Value{uint32_t{128009}},
            "128009 <|eot_id|> (was " + (id ? std::to_string(*id) : std::string("missing")) + ")");
    }
  }
  t.finish();
}

}  // namespace

void translate_known_layouts(GgufFile& file) {
  if (const std::string* type = string_value(file, "general.type"); type && *type == "adapter") {
    return;
  }
  const std::string* arch = string_value(file, "general.architecture");
  if (!arch) return;
  if (*arch == "gemma3") {
    translate_gemma3(file);
  } else if (*arch == "llama") {
    translate_llama3(file);
  }
}

}  // namespace vkllm::gguf
