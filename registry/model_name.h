// Model names as Ollama spells them: [scheme://][host[:port]/][namespace/]model[:tag].
// Every part is validated against Ollama's character and length rules, which also guarantees a
// part can never be ".", "..", empty or contain a path separator, so parts are safe to use as
// path components or URL segments.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace vkllm::registry {

inline constexpr std::string_view kDefaultHost = "registry.ollama.ai";
inline constexpr std::string_view kDefaultNamespace = "library";
inline constexpr std::string_view kDefaultTag = "latest";

struct ModelName {
  std::string scheme = "https";  // "https" or "http" (from an explicit "http://" prefix)
  std::string host;              // e.g. "registry.ollama.ai", "localhost:5000", "hf.co"
  std::string ns;                // namespace, e.g. "library"
  std::string model;             // e.g. "llama3.2"
  std::string tag;               // e.g. "latest"

  // Parses and fills Ollama's defaults. Throws RegistryError(invalid_name) with a message
  // naming the offending part and why (empty, too long, bad character at index N).
  static ModelName parse(std::string_view text);
  static std::optional<ModelName> try_parse(std::string_view text) noexcept;

  // Ollama's display form: drops the default host, and the default namespace on the default
  // host; always has the tag. "llama3.2:latest", "user/m:7b", "hf.co/org/repo:Q4_K_M".
  std::string display() const;
  // host/namespace/model:tag (no scheme).
  std::string full() const;
  // namespace/model, the repository path in /v2/<repository>/manifests/<tag>.
  std::string repository() const;
  // scheme://host, the registry base URL.
  std::string base_url() const { return scheme + "://" + host; }
  // Case-folded full(); two names with the same key are the same model (Ollama compares
  // names case-insensitively per part).
  std::string key() const;

  bool same_model(const ModelName& other) const { return key() == other.key(); }
  // Exact (case-sensitive) equality of all parts.
  friend bool operator==(const ModelName&, const ModelName&) = default;
};

}  // namespace vkllm::registry
