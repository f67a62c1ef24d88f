// Shared by the per-family Ollama-layout translations (engine/gguf/ollama_layout*.cpp): reading a
// file's view in place and editing it with every change noted for `gguf-info` (Translation).
// Internal to the translations; everything else uses engine/gguf/ollama_layout.h.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/ollama_layout.h"

namespace vkllm::gguf::ollama {

const std::string* string_value(const GgufFile& f, std::string_view key);
const Array* array_value(const GgufFile& f, std::string_view key);
// Item `index` of the token list, or "" (read in place: the list can hold 262k strings).
std::string_view token_at(const GgufFile& f, size_t index);
bool any_tensor_with_prefix(const GgufFile& f, std::string_view prefix);
std::string join(const std::vector<std::string>& parts);
// A float without trailing zeros: "500000", "0.1".
std::string number(double v);

// Edits the view and notes each change for translation().changes.
class Translation {
 public:
  Translation(GgufFile& f, std::string name, std::vector<std::string> markers);

  [[noreturn]] void refuse(const std::string& what) const;

  void set(const std::string& key, Value v, const std::string& why);
  void set_default_f32(const std::string& key, float v);
  // A key Ollama's converter wrote, moved to llama.cpp's name (refused if both disagree).
  void move_f32(const std::string& from, const std::string& to);
  void erase_keys_with_prefix(const std::string& prefix);
  // Every key under `from` moves to the same name under `to` (an architecture's prefix).
  void rename_key_prefix(const std::string& from, const std::string& to);
  void hide_tensors_with_prefix(std::string_view prefix);
  void rename_tensor(const std::string& from, const std::string& to);
  // Every tensor whose name holds `needle` gets it replaced (first occurrence) by `replacement`;
  // one change is noted for all. Returns how many were renamed.
  size_t rename_tensors_containing(std::string_view needle, std::string_view replacement);
  void note(std::string change) { changes_.push_back(std::move(change)); }
  // Cuts the tokenizer's per-token arrays to `rows` entries.
  void truncate_vocab(size_t rows);

  void finish();

 private:
  GgufFile& f_;
  std::string name_;
  std::vector<std::string> markers_;
  std::vector<std::string> changes_;
};

// The per-family translations: each returns at once for a file without its markers.
void translate_gemma3(GgufFile& f);
void translate_embedding_gemma(GgufFile& f);
void translate_gemma4(GgufFile& f);
void translate_llama3(GgufFile& f);
void translate_mistral3(GgufFile& f);
void translate_qwen3moe(GgufFile& f);
void translate_qwen25vl(GgufFile& f);
void translate_gptoss(GgufFile& f);
void translate_snowflake_arctic_embed2(GgufFile& f);

}  // namespace vkllm::gguf::ollama
