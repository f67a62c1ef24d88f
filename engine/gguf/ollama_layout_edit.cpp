#include "engine/gguf/ollama_layout_edit.h"

#include <algorithm>
#include <memory>
#include <variant>

namespace vkllm::gguf::ollama {

const std::string* string_value(const GgufFile& f, std::string_view key) {
  const Value* v = f.find(key);
  return v ? std::get_if<std::string>(&v->v) : nullptr;
}

const Array* array_value(const GgufFile& f, std::string_view key) {
  const Value* v = f.find(key);
  const auto* a = v ? std::get_if<std::shared_ptr<Array>>(&v->v) : nullptr;
  return a ? a->get() : nullptr;
}

std::string_view token_at(const GgufFile& f, size_t index) {
  const Array* tokens = array_value(f, "tokenizer.ggml.tokens");
  if (!tokens || index >= tokens->items.size()) return {};
  const auto* s = std::get_if<std::string>(&tokens->items[index].v);
  return s ? std::string_view(*s) : std::string_view();
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

Translation::Translation(GgufFile& f, std::string name, std::vector<std::string> markers)
    : f_(f), name_(std::move(name)), markers_(std::move(markers)) {}

void Translation::refuse(const std::string& what) const {
  throw LayoutError("model file looks like Ollama's " + name_ + " layout (" + join(markers_) +
                    ") but cannot be translated to llama.cpp's: " + what);
}

void Translation::set(const std::string& key, Value v, const std::string& why) {
  f_.set_value(key, std::move(v));
  changes_.push_back(key + " = " + why);
}

void Translation::set_default_f32(const std::string& key, float v) {
  if (!f_.has(key)) set(key, Value{v}, number(v) + " (default, missing)");
}

void Translation::move_f32(const std::string& from, const std::string& to) {
  const auto value = f_.get_optional<float>(from);
  if (!value) return;
  if (const auto flat = f_.get_optional<float>(to); flat && *flat != *value) {
    refuse(from + " (" + number(*value) + ") and " + to + " (" + number(*flat) + ") disagree");
  }
  f_.set_value(to, Value{*value});
  f_.erase_key(from);
  changes_.push_back(to + " = " + number(*value) + " (from " + from + ")");
}

void Translation::erase_keys_with_prefix(const std::string& prefix) {
  std::vector<std::string> keys;
  for (std::string_view k : f_.metadata_keys()) {
    if (k.starts_with(prefix)) keys.emplace_back(k);
  }
  for (const auto& k : keys) f_.erase_key(k);
  if (!keys.empty()) {
    changes_.push_back("hid " + std::to_string(keys.size()) + " " + prefix + "* keys");
  }
}

void Translation::rename_key_prefix(const std::string& from, const std::string& to) {
  std::vector<std::string> keys;
  for (std::string_view k : f_.metadata_keys()) {
    if (k.starts_with(from)) keys.emplace_back(k);
  }
  for (const auto& k : keys) {
    const std::string renamed = to + k.substr(from.size());
    if (f_.has(renamed)) refuse("it has both " + k + " and " + renamed);
    Value value = *f_.find(k);  // copied: set_value may move the stored values
    f_.erase_key(k);
    f_.set_value(renamed, std::move(value));
  }
  if (!keys.empty()) {
    changes_.push_back(std::to_string(keys.size()) + " " + from + "* keys renamed to " + to + "*");
  }
}

void Translation::hide_tensors_with_prefix(std::string_view prefix) {
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

void Translation::rename_tensor(const std::string& from, const std::string& to) {
  if (f_.find_tensor(to)) refuse("it has both " + from + " and " + to);
  f_.rename_tensor(from, to);
  changes_.push_back("tensor " + from + " renamed to " + to);
}

size_t Translation::rename_tensors_containing(std::string_view needle,
                                              std::string_view replacement) {
  std::vector<std::string> names;
  for (const auto& t : f_.tensors()) {
    if (t.name.find(needle) != std::string::npos) names.push_back(t.name);
  }
  for (const auto& from : names) {
    std::string to = from;
    to.replace(to.find(needle), needle.size(), replacement);
    if (f_.find_tensor(to)) refuse("it has both " + from + " and " + to);
    f_.rename_tensor(from, std::move(to));
  }
  if (!names.empty()) {
    changes_.push_back(std::to_string(names.size()) + " tensors renamed from *" +
                       std::string(needle) + "* to *" + std::string(replacement) + "*");
  }
  return names.size();
}

void Translation::truncate_vocab(size_t rows) {
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

void Translation::finish() {
  LayoutTranslation& t = f_.mutable_translation();
  t.name = "ollama-" + name_;
  t.changes = {"recognised by " + join(markers_)};
  t.changes.insert(t.changes.end(), changes_.begin(), changes_.end());
}

}  // namespace vkllm::gguf::ollama
