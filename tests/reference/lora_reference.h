// llama.cpp's recorded outputs with a LoRA adapter (tests/reference/lora/*.json): each file holds
// the make-model and make-lora parameters that regenerate its base and adapter fixtures bit for
// bit, the prompt, and what llama.cpp's CPU backend computed with --lora (prompt tokens, last
// logits, greedy continuation and its margins). Compared by llama_cpp_reference.h's rules.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/model/lora_maker.h"
#include "engine/model/model_maker.h"
#include "tests/reference/llama_cpp_reference.h"

namespace vkllm::reference {

struct LoraCase {
  std::string name;                // file stem, e.g. "lora-llama-f16"
  model::MakeModelOptions base;    // make-model's options (the vocab file separately)
  std::filesystem::path vocab;     // the vocab GGUF make-model takes
  model::MakeLoraOptions adapter;  // make-lora's options
  float scale = 1.0f;              // llama.cpp's --lora-scaled user scale
  LlamaCppCase expected;           // prompt, tokens, logits; model_path unused
};

// The case names of `dir`: model_reference.h's model_case_names.
LoraCase load_lora_case(const std::filesystem::path& dir, const std::string& name);

// The base model's and the adapter's GGUF bytes, as make-model and make-lora write them.
std::vector<uint8_t> lora_case_base_bytes(const LoraCase& c);
std::vector<uint8_t> lora_case_adapter_bytes(const LoraCase& c, const gguf::GgufFile& base);

}  // namespace vkllm::reference
