// llama.cpp's recorded outputs for make-model fixtures of the model families (tests/reference/
// families/*.json): each file holds the make-model parameters that regenerate its fixture bit for
// bit, the prompt, and what llama.cpp's CPU backend computed: for a decoder the prompt tokens, last
// logits and greedy continuation with its margins; for an embedding model the prompt tokens and
// its pooled embedding (not normalised). Compared by llama_cpp_reference.h's rules.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/model/model_maker.h"
#include "tests/reference/llama_cpp_reference.h"

namespace vkllm::reference {

struct FamilyCase {
  std::string name;                     // file stem, e.g. "mistral3-f16"
  model::MakeModelOptions model;        // make-model's options (the vocab file separately)
  std::filesystem::path vocab;          // the vocab GGUF make-model takes
  bool embedding = false;               // "kind": "embedding" (else "decoder")
  LlamaCppCase expected;                // prompt, tokens, logits (decoders); model_path unused
  std::vector<float> embedding_values;  // embedding models: llama.cpp's pooled output
};

// The case files in `dir`, sorted.
std::vector<std::string> family_case_names(const std::filesystem::path& dir);
FamilyCase load_family_case(const std::filesystem::path& dir, const std::string& name);
// The fixture's GGUF bytes, as make-model writes them.
std::vector<uint8_t> family_case_model_bytes(const FamilyCase& c);

}  // namespace vkllm::reference
