#include "registry/model_name.h"

#include <cctype>

#include "registry/ascii_text.h"
#include "registry/errors.h"

namespace vkllm::registry {
namespace {

enum class Part { host, ns, model, tag };

const char* part_label(Part part) {
  switch (part) {
    case Part::host:
      return "host";
    case Part::ns:
      return "namespace";
    case Part::model:
      return "model";
    case Part::tag:
      return "tag";
  }
  return "?";
}

size_t max_length(Part part) {
  return part == Part::host ? 350 : 80;
}

bool alnum_or_underscore(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

std::string printable(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 120)) out.push_back((c >= 0x20 && c < 0x7f) ? c : '?');
  if (text.size() > 120) out += "...";
  return out;
}

// Ollama's per-part rules: first character [A-Za-z0-9_], then [A-Za-z0-9_-], plus '.' except in
// namespaces and ':' only in hosts. They rule out "", ".", "..", '/', '\\', '%', NUL and
// anything non-ASCII, which is what keeps parts safe as path components.
void check_part(Part part, std::string_view value, std::string_view whole) {
  auto fail = [&](const std::string& why) {
    throw RegistryError(ErrorKind::invalid_name, "invalid model name \"" + printable(whole) +
                                                     "\": " + part_label(part) + " " + why);
  };
  if (value.empty()) fail("is empty");
  if (value.size() > max_length(part))
    fail("is " + std::to_string(value.size()) + " characters long (at most " +
         std::to_string(max_length(part)) + ")");
  for (size_t i = 0; i < value.size(); ++i) {
    char c = value[i];
    bool ok =
        alnum_or_underscore(c) ||
        (i > 0 && (c == '-' || (c == '.' && part != Part::ns) || (c == ':' && part == Part::host)));
    if (!ok) {
      std::string shown = (c >= 0x20 && c < 0x7f)
                              ? "'" + std::string(1, c) + "'"
                              : "byte " + std::to_string(static_cast<unsigned char>(c));
      fail("has " + shown + " at index " + std::to_string(i) + " which is not allowed" +
           (i == 0 ? " as the first character" : ""));
    }
  }
}

}  // namespace

ModelName ModelName::parse(std::string_view text) {
  ModelName name;
  std::string_view rest = text;
  auto invalid = [&](const std::string& why) {
    throw RegistryError(ErrorKind::invalid_name,
                        "invalid model name \"" + printable(text) + "\": " + why);
  };
  if (text.empty()) invalid("name is empty");

  // Right to left, as Ollama does: a ':' after the last '/' starts the tag.
  size_t last_colon = rest.rfind(':');
  size_t last_slash = rest.rfind('/');
  bool has_tag = last_colon != std::string_view::npos &&
                 (last_slash == std::string_view::npos || last_colon > last_slash);
  std::string_view tag;
  if (has_tag) {
    tag = rest.substr(last_colon + 1);
    rest = rest.substr(0, last_colon);
  }
  std::string_view host, ns, model;
  size_t slash = rest.rfind('/');
  bool has_ns = false, has_host = false;
  if (slash == std::string_view::npos) {
    model = rest;
  } else {
    model = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
    has_ns = true;
    slash = rest.rfind('/');
    if (slash == std::string_view::npos) {
      ns = rest;
    } else {
      ns = rest.substr(slash + 1);
      host = rest.substr(0, slash);
      has_host = true;
      if (size_t sep = host.find("://"); sep != std::string_view::npos) {
        std::string scheme = ascii_lower(host.substr(0, sep));
        if (scheme != "http" && scheme != "https")
          invalid("scheme \"" + printable(scheme) + "\" is not http or https");
        name.scheme = scheme;
        host = host.substr(sep + 3);
      }
      if (host.find('/') != std::string_view::npos)
        invalid("too many '/'-separated parts (at most host/namespace/model)");
    }
  }

  check_part(Part::model, model, text);
  if (has_tag) check_part(Part::tag, tag, text);
  if (has_ns) check_part(Part::ns, ns, text);
  if (has_host) check_part(Part::host, host, text);

  name.host = has_host ? std::string(host) : std::string(kDefaultHost);
  name.ns = has_ns ? std::string(ns) : std::string(kDefaultNamespace);
  name.model = std::string(model);
  name.tag = has_tag ? std::string(tag) : std::string(kDefaultTag);
  return name;
}

std::optional<ModelName> ModelName::try_parse(std::string_view text) noexcept {
  try {
    return parse(text);
  } catch (...) {
    return std::nullopt;
  }
}

std::string ModelName::display() const {
  bool default_host = ascii_lower(host) == kDefaultHost;
  std::string out;
  if (!default_host)
    out = host + "/" + ns + "/";
  else if (ascii_lower(ns) != kDefaultNamespace)
    out = ns + "/";
  return out + model + ":" + tag;
}

std::string ModelName::full() const {
  return host + "/" + ns + "/" + model + ":" + tag;
}

std::string ModelName::repository() const {
  return ns + "/" + model;
}

std::string ModelName::key() const {
  return ascii_lower(full());
}

}  // namespace vkllm::registry
