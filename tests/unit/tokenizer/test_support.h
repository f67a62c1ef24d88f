// Shared helpers of the tokenizer tests: locating the shared test data, loading the vocab GGUFs
// (and the Llama 3 one built from encoder.json + vocab.bpe), reading llama.cpp's test vectors.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace vkllm::tokenizer::testing {

std::filesystem::path shared_dir();
std::filesystem::path vocab_dir();
std::string read_file(const std::filesystem::path& path);

// "llama-spm" -> ggml-vocab-llama-spm.gguf; "llama-bpe" is built from llama3.2/, "gemma4" is
// tests/reference/gemma4tok's vocabulary. Cached per
// process (loading the larger vocabularies takes a moment).
const Tokenizer& vocab_tokenizer(const std::string& name);
// Every vocabulary GGUF in the shared folder plus "llama-bpe", sorted.
std::vector<std::string> all_vocab_names();
// The vocabularies with an .inp/.out vector pair whose GGUF is present (llama-bpe included).
std::vector<std::string> vocab_names_with_vectors();

struct TestVector {
  std::string text;
  std::vector<int32_t> ids;
};
// Parses X.gguf.inp/.out the way llama.cpp's test-tokenizer-0 does: strings separated by
// "\n__ggml_vocab_test__\n" (each string is followed by one, so the text after the last is
// empty and not a test), one line of ids per string.
std::vector<TestVector> read_vectors(const std::string& name);

bool is_valid_utf8(std::string_view s);
bool built_with_address_sanitizer();

}  // namespace vkllm::tokenizer::testing
