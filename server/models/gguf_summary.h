// What the server reads from a model's GGUF blob for /api/show, /api/tags and create: the
// ModelDetails Ollama derives (family, parameter size, quantization), model_info, the tensor
// table, context/embedding length and the GGUF-derived capabilities. Only the header is read,
// even from zstd blobs (see open_gguf_header), and summaries are cached by blob digest.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "registry/blob_store.h"
#include "registry/model_store.h"

namespace vkllm::models {

struct GgufSummary {
  std::string architecture;      // general.architecture
  std::string general_type;      // general.type ("model", "projector", "mmproj", "adapter"...)
  uint64_t parameter_count = 0;  // general.parameter_count, else the sum of tensor elements
  std::string file_type;         // Ollama's name of general.file_type, e.g. "Q4_K_M"
  std::optional<uint64_t> context_length, embedding_length;  // <arch>.context_length, ...
  std::vector<std::string> capabilities;                     // completion|embedding, vision, audio
  std::string chat_template;                                 // tokenizer.chat_template, if any
  nlohmann::ordered_json model_info = nlohmann::ordered_json::object();  // all KVs, arrays kept
  nlohmann::json tensors = nlohmann::json::array();                      // [{name,type,shape}]
  // The architecture of a vision tower inside the file (Ollama's single-file layout) that the
  // image encoders read (engine/gguf/inline_projector.h), else "".
  std::string inline_projector;

  bool is_projector() const;
  registry::ModelDetails details() const;
  // model_info as /api/show returns it: without general.name and tokenizer.chat_template,
  // arrays longer than 5 replaced by [] unless verbose.
  nlohmann::ordered_json show_model_info(bool verbose) const;
};

// Reads the summary of a GGUF blob, or returns the one read before (the last few are kept). Throws
// RegistryError(invalid_input, "supplied file was not in GGUF format: ...") when the blob is not a
// valid GGUF (a 400 for an HTTP client), RegistryError(not_found) when it is absent.
std::shared_ptr<const GgufSummary> read_gguf_summary(const registry::BlobStore& blobs,
                                                     const registry::Digest& blob);

// Ollama's format.HumanNumber: 8030261248 → "8.0B", 135270000 → "135.27M", 7000 → "7K".
std::string human_number(uint64_t n);
// llama.cpp's file type ids as Ollama names them ("Q4_K_M"); "unknown" for other ids.
std::string file_type_name(uint64_t id);

}  // namespace vkllm::models
