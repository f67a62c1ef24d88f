// Quantizing a model's weights on create (/api/create `quantize`, `vkllm create -q`), as Ollama
// does for F16/BF16/F32 GGUFs: each tensor gets the type llama.cpp's llama-quantize gives it for
// the file type (engine/model/quant_mix.h, imatrix-free) and is quantized by the engine's
// quantizers (byte-identical to llama.cpp's), and the new GGUF is streamed into the blob store,
// visible only once complete (an error, a full disk or a client that left leaves no blob).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>

#include "engine/model/quant_mix.h"
#include "registry/model_store.h"

namespace vkllm::models {

// q4_K_M (alias q4_K), q4_K_S, q5_K_M, q6_K, q8_0, and F16, BF16, F32, case-insensitive.
// Anything else: RegistryError(invalid_input) "unsupported quantization type X - supported types
// are ..." (Ollama's text, with vkllm's list).
model::FileType parse_quantize_type(const std::string& name);

// Ollama's progress line: "quantizing F16 model to Q4_K_M" with bytes done of the source's.
using QuantizeProgress =
    std::function<void(const std::string& status, uint64_t completed, uint64_t total)>;

// Writes `source` (a GGUF blob) with its weights in `target`'s mix as a new blob and returns its
// digest; nullopt when `stop` fired (nothing is left behind). A source with any tensor that is
// not F16, BF16 or F32 is RegistryError(invalid_input) "quantization is only supported for F16,
// BF16 and F32 models".
std::optional<registry::Digest> quantize_blob(registry::ModelStore& store,
                                              const registry::Digest& source,
                                              model::FileType target,
                                              const QuantizeProgress& progress,
                                              std::stop_token stop);

}  // namespace vkllm::models
