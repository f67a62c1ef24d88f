// Ollama's image manifest (Docker schema 2) and the media types it uses.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "registry/digest.h"

namespace vkllm::registry {

namespace media_type {
inline constexpr std::string_view kManifest =
    "application/vnd.docker.distribution.manifest.v2+json";
inline constexpr std::string_view kConfig = "application/vnd.docker.container.image.v1+json";
inline constexpr std::string_view kModel = "application/vnd.ollama.image.model";
inline constexpr std::string_view kProjector = "application/vnd.ollama.image.projector";
inline constexpr std::string_view kAdapter = "application/vnd.ollama.image.adapter";
inline constexpr std::string_view kDraft = "application/vnd.ollama.image.draft";
inline constexpr std::string_view kTemplate = "application/vnd.ollama.image.template";
inline constexpr std::string_view kPrompt =
    "application/vnd.ollama.image.prompt";  // legacy template
inline constexpr std::string_view kSystem = "application/vnd.ollama.image.system";
inline constexpr std::string_view kParams = "application/vnd.ollama.image.params";
inline constexpr std::string_view kMessages = "application/vnd.ollama.image.messages";
inline constexpr std::string_view kLicense = "application/vnd.ollama.image.license";
inline constexpr std::string_view kTensor = "application/vnd.ollama.image.tensor";  // unsupported
}  // namespace media_type

struct Layer {
  std::string media_type;
  Digest digest;
  uint64_t size = 0;
  std::string from;  // source model display name (set by create; optional)
  std::string name;  // tensor/file name for safetensors layers (optional)
};

struct Manifest {
  int schema_version = 2;
  std::string media_type{media_type::kManifest};
  Layer config;
  std::vector<Layer> layers;

  // Strict enough to be safe (every digest validated, sizes non-negative integers), lenient
  // about unknown keys. Throws RegistryError(invalid_input) naming the bad field.
  static Manifest parse(std::string_view json);
  // Ollama's field order: schemaVersion, mediaType, config, layers; compact JSON.
  std::string to_json() const;

  // Config first, then layers in order, duplicates removed.
  std::vector<Digest> blob_digests() const;
  // Sum of layer sizes plus the config size (what /api/tags reports as size).
  uint64_t total_size() const;
  // First layer of a media type, or nullptr.
  const Layer* find_layer(std::string_view type) const;
};

}  // namespace vkllm::registry
