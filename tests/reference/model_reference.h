// llama.cpp's recorded outputs for make-model fixtures (tests/reference/<topic>/*.json, e.g.
// moe/ and families/): each file holds the `vkllm dev make-model` parameters that regenerate its
// model bit for bit, the prompt, and what llama.cpp's CPU backend computed: for a decoder the
// prompt tokens, last logits and greedy continuation with its margins; for an embedding model
// ("kind": "embedding") the prompt tokens and its pooled embedding (not normalised). Compared by
// llama_cpp_reference.h's rules. The pieces are shared with the LoRA references.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/model/model_maker.h"
#include "tests/reference/llama_cpp_reference.h"

namespace vkllm::reference {

struct ModelCase {
  std::string name;                     // file stem, e.g. "qwen3moe-f16"
  model::MakeModelOptions model;        // make-model's options (the vocab file separately)
  std::filesystem::path vocab;          // the vocab GGUF make-model takes
  bool embedding = false;               // "kind": "embedding" (else a decoder)
  LlamaCppCase expected;                // prompt, tokens, logits (decoders); model_path unused
  std::vector<float> embedding_values;  // embedding models: llama.cpp's pooled output
};

// The case files (*.json) in `dir`, sorted by name.
std::vector<std::string> model_case_names(const std::filesystem::path& dir);
ModelCase load_model_case(const std::filesystem::path& dir, const std::string& name);
// The model's GGUF bytes, as make-model writes them.
std::vector<uint8_t> model_case_bytes(const ModelCase& c);
std::vector<uint8_t> make_model_bytes(const model::MakeModelOptions& options,
                                      const std::filesystem::path& vocab);
// The options' Pixtral projector (make-model --projector PATH for mistral3): it carries the text
// model's [IMG_BREAK] embedding, so the text model is declared (not filled) to read that row.
std::vector<uint8_t> make_pixtral_projector_bytes(const model::MakeModelOptions& options,
                                                  const std::filesystem::path& vocab,
                                                  std::string_view projector_shape);

// The parts of a case file other references share: a make-model parameter object (`what` names it
// in errors; its vocab, relative to ../shared/testdata or, when it starts with "tests/", to the
// source tree, goes to *vocab), and the prompt with
// llama.cpp's decoder outputs for a model of `type`.
model::MakeModelOptions read_make_model_options(const nlohmann::json& m, const std::string& name,
                                                const std::string& what,
                                                std::filesystem::path* vocab);
void read_decoder_expected(const nlohmann::json& j, const std::string& name, model::FileType type,
                           LlamaCppCase& e);

}  // namespace vkllm::reference
