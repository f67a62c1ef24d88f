// snowflake-arctic-embed2 (bert with an XLM-RoBERTa tokenizer) as published in Ollama's library.
#include <openssl/evp.h>

#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "engine/gguf/ollama_layout_edit.h"

namespace vkllm::gguf::ollama {

namespace {

constexpr const char* kSnowflakeCharsmapKey = "tokenizer.ggml.precompiled_charsmap";

}  // namespace

// The file's tokenizer.ggml.precompiled_charsmap is base64 text stored one character per string
// (the form of the tokenizer.json field it came from), where llama.cpp's converter writes the
// decoded bytes, the only form llama.cpp (and vkllm's unigram tokenizer) read. Recognised as
// Ollama's layer does: architecture bert, tokenizer model t5, the charsmap an array of strings.
void translate_snowflake_arctic_embed2(GgufFile& f) {
  const std::string* model = string_value(f, "tokenizer.ggml.model");
  const Array* charsmap = array_value(f, kSnowflakeCharsmapKey);
  if (!model || *model != "t5" || !charsmap || charsmap->element_type != ValueType::STRING) {
    return;
  }
  const size_t n = charsmap->items.size();
  Translation t(f, "snowflake-arctic-embed2",
                {"bert with a t5 tokenizer",
                 std::string(kSnowflakeCharsmapKey) + " as " + std::to_string(n) + " strings"});
  std::string text;
  text.reserve(n + 3);
  for (size_t i = 0; i < n; ++i) {
    const auto* s = std::get_if<std::string>(&charsmap->items[i].v);
    if (!s || s->size() != 1) {
      t.refuse(std::string(kSnowflakeCharsmapKey) + " entry " + std::to_string(i) + " is '" +
               (s ? *s : std::string()) + "', not one base64 character");
    }
    text += *s;
  }
  // OpenSSL decodes whole 4-character groups: restore padding Ollama's decoder does not need.
  while (text.size() % 4 != 0) text += '=';
  if (text.size() > static_cast<size_t>(INT_MAX)) {
    t.refuse(std::string(kSnowflakeCharsmapKey) + " is too long for a charsmap");
  }
  std::vector<unsigned char> bytes(text.size() / 4 * 3);
  const int decoded =
      text.empty()
          ? 0
          : EVP_DecodeBlock(bytes.data(), reinterpret_cast<const unsigned char*>(text.data()),
                            static_cast<int>(text.size()));
  if (decoded < 0) t.refuse(std::string(kSnowflakeCharsmapKey) + " is not base64 text");
  size_t size = static_cast<size_t>(decoded);
  for (size_t i = text.size(); i > 0 && text[i - 1] == '=' && size > 0; --i) --size;
  // The compiled charsmap starts with the size of its trie, followed by the trie and the
  // replacement strings.
  uint32_t trie_size = 0;
  if (size >= 4) std::memcpy(&trie_size, bytes.data(), 4);
  if (size < 4 || uint64_t{trie_size} + 4 >= size) {
    t.refuse(std::string(kSnowflakeCharsmapKey) + " decodes to " + std::to_string(size) +
             " bytes, not a compiled charsmap");
  }
  auto array = std::make_shared<Array>();
  array->element_type = ValueType::U8;
  array->items.reserve(size);
  for (size_t i = 0; i < size; ++i) array->items.push_back(Value{uint8_t{bytes[i]}});
  t.set(kSnowflakeCharsmapKey, Value{std::move(array)},
        std::to_string(size) + " bytes (decoded from " + std::to_string(n) + " base64 characters)");
  t.finish();
}

}  // namespace vkllm::gguf::ollama
