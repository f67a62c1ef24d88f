// A validated content digest. Only "sha256:<64 lowercase hex>" is representable, so a Digest
// can be turned into a file name without any chance of escaping the store.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace vkllm::registry {

class Digest {
 public:
  // The digest of zero bytes, so a default-constructed Digest is still a valid one.
  Digest() : hex_("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") {}

  // Strict wire form "sha256:<64 lowercase hex>". Throws RegistryError(invalid_digest) naming
  // what is wrong (prefix, length, the offending character).
  static Digest parse(std::string_view text);
  static std::optional<Digest> try_parse(std::string_view text) noexcept;

  // Ollama's on-disk blob file name "sha256-<64 lowercase hex>" (also accepts the wire form).
  static Digest parse_file_name(std::string_view name);
  // Only the file-name form, nullopt for anything else (a directory's other files).
  static std::optional<Digest> try_parse_file_name(std::string_view name) noexcept;

  // From 64 lowercase hex characters without prefix (what /api/tags prints).
  static Digest from_hex(std::string_view hex);

  // sha256 of the given bytes.
  static Digest of(std::span<const std::byte> bytes);
  static Digest of(std::string_view text);

  const std::string& hex() const noexcept { return hex_; }      // 64 hex chars
  std::string str() const { return "sha256:" + hex_; }          // wire form
  std::string file_name() const { return "sha256-" + hex_; }    // Ollama's blob file name
  std::string short_hex() const { return hex_.substr(0, 12); }  // "pulling <12 hex>"

  friend bool operator==(const Digest&, const Digest&) = default;
  friend auto operator<=>(const Digest&, const Digest&) = default;

 private:
  explicit Digest(std::string hex) : hex_(std::move(hex)) {}
  std::string hex_;
};

}  // namespace vkllm::registry

template <>
struct std::hash<vkllm::registry::Digest> {
  size_t operator()(const vkllm::registry::Digest& d) const noexcept {
    return std::hash<std::string>{}(d.hex());
  }
};
