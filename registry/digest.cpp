#include "registry/digest.h"

#include "registry/errors.h"
#include "registry/sha256.h"

namespace vkllm::registry {
namespace {

constexpr size_t kHexLength = 64;

// Returns an empty string when `hex` is valid, else what is wrong with it.
std::string hex_problem(std::string_view hex) {
  if (hex.size() != kHexLength)
    return "expected 64 hex characters, got " + std::to_string(hex.size());
  for (size_t i = 0; i < hex.size(); ++i) {
    char c = hex[i];
    bool lower_hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    if (!lower_hex) {
      std::string shown = (c >= 0x20 && c < 0x7f)
                              ? std::string(1, c)
                              : "\\x" + std::to_string(static_cast<unsigned char>(c));
      return "character '" + shown + "' at hex offset " + std::to_string(i) +
             " is not a lowercase hex digit";
    }
  }
  return {};
}

// Keeps error messages bounded and printable whatever the input was.
std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text.substr(0, 100)) out.push_back((c >= 0x20 && c < 0x7f) ? c : '?');
  if (text.size() > 100) out += "...";
  return out + "\"";
}

std::optional<Digest> parse_with_separator(std::string_view text, std::string_view prefix,
                                           std::string* problem) {
  if (!text.starts_with(prefix)) {
    if (problem) *problem = "must start with \"" + std::string(prefix) + "\"";
    return std::nullopt;
  }
  std::string_view hex = text.substr(prefix.size());
  std::string why = hex_problem(hex);
  if (!why.empty()) {
    if (problem) *problem = why;
    return std::nullopt;
  }
  return Digest::from_hex(hex);
}

}  // namespace

Digest Digest::from_hex(std::string_view hex) {
  std::string why = hex_problem(hex);
  if (!why.empty())
    throw RegistryError(ErrorKind::invalid_digest, "invalid digest " + quoted(hex) + ": " + why);
  return Digest(std::string(hex));
}

Digest Digest::parse(std::string_view text) {
  std::string why;
  auto digest = parse_with_separator(text, "sha256:", &why);
  if (!digest)
    throw RegistryError(ErrorKind::invalid_digest, "invalid digest " + quoted(text) + ": " + why);
  return *digest;
}

std::optional<Digest> Digest::try_parse(std::string_view text) noexcept {
  try {
    return parse_with_separator(text, "sha256:", nullptr);
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<Digest> Digest::try_parse_file_name(std::string_view name) noexcept {
  try {
    return parse_with_separator(name, "sha256-", nullptr);
  } catch (...) {
    return std::nullopt;
  }
}

Digest Digest::parse_file_name(std::string_view name) {
  std::string why;
  auto digest =
      parse_with_separator(name, name.starts_with("sha256:") ? "sha256:" : "sha256-", &why);
  if (!digest)
    throw RegistryError(ErrorKind::invalid_digest,
                        "invalid blob file name " + quoted(name) + ": " + why);
  return *digest;
}

Digest Digest::of(std::span<const std::byte> bytes) {
  Sha256 hash;
  hash.update(bytes);
  return hash.finish();
}

Digest Digest::of(std::string_view text) {
  return of(std::as_bytes(std::span(text)));
}

}  // namespace vkllm::registry
