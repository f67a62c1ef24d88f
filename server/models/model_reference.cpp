#include "server/models/model_reference.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "registry/errors.h"

namespace vkllm::models {

using registry::ErrorKind;
using registry::RegistryError;

std::optional<registry::ModelName> parse_model_reference(const std::string& text) {
  if (text.empty()) return std::nullopt;
  std::string_view t = text;
  const auto drop = [&t](std::string_view suffix) {
    if (!t.ends_with(suffix)) return false;
    t.remove_suffix(suffix.size());
    return true;
  };
  bool local = drop(":local");
  const bool cloud = drop(":cloud");
  local = drop(":local") || local;
  if (local && cloud) {
    throw RegistryError(ErrorKind::invalid_input, "use either :local or :cloud, not both: " + text);
  }
  auto name = registry::ModelName::try_parse(std::string(t));
  if (name && (cloud || name->tag == "cloud" || name->tag.ends_with("-cloud"))) {
    throw RegistryError(ErrorKind::not_found,
                        "model '" + text + "' not found: vkllm runs local models only");
  }
  return name;
}

registry::Digest parse_blob_digest(std::string text) {
  if (text.size() != 71 || text.compare(0, 6, "sha256") != 0 ||
      (text[6] != ':' && text[6] != '-')) {
    throw RegistryError(ErrorKind::invalid_input, "invalid digest format");
  }
  text[6] = ':';
  std::transform(text.begin() + 7, text.end(), text.begin() + 7,
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const auto d = registry::Digest::try_parse(text);
  if (!d) throw RegistryError(ErrorKind::invalid_input, "invalid digest format");
  return *d;
}

}  // namespace vkllm::models
