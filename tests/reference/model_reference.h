// llama.cpp's recorded outputs for make-model fixtures (tests/reference/<topic>/*.json, e.g.
// moe/): each file holds the `vkllm dev make-model` parameters that regenerate its model bit for
// bit, the prompt, and what llama.cpp's CPU backend computed (prompt tokens, last logits, greedy
// continuation and its margins). Compared by llama_cpp_reference.h's rules.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/model/model_maker.h"
#include "tests/reference/llama_cpp_reference.h"

namespace vkllm::reference {

struct ModelCase {
  std::string name;               // file stem, e.g. "qwen3moe-f16"
  model::MakeModelOptions model;  // make-model's options (the vocab file separately)
  std::filesystem::path vocab;
  LlamaCppCase expected;  // prompt, tokens, logits; model_path unused
};

// The case files in `dir`, sorted.
std::vector<std::string> model_case_names(const std::filesystem::path& dir);
ModelCase load_model_case(const std::filesystem::path& dir, const std::string& name);
// The model's GGUF bytes, as make-model writes them.
std::vector<uint8_t> model_case_bytes(const ModelCase& c);

}  // namespace vkllm::reference
