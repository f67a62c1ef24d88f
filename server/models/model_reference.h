// How a client names what it wants: a model reference with Ollama's source suffixes, and a blob
// digest in either of the spellings Ollama accepts. Errors are RegistryErrors (invalid input:
// 400, not found: 404) so every caller reports them alike.
#pragma once

#include <optional>
#include <string>

#include "registry/digest.h"
#include "registry/model_name.h"

namespace vkllm::models {

// A model name, nullopt when it is empty or malformed. ":local" asks for the local copy, which
// is all vkllm has, so it is dropped; ":cloud" (or a tag ending "-cloud") names a cloud model,
// which vkllm never has (not_found); both at once is invalid input (compat §0.4).
std::optional<registry::ModelName> parse_model_reference(const std::string& text);

// sha256:<64 hex> or sha256-<64 hex>, any hex case; invalid input otherwise.
registry::Digest parse_blob_digest(std::string text);

}  // namespace vkllm::models
