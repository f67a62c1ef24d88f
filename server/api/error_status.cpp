#include "server/api/error_status.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "registry/errors.h"
#include "registry/oci_error.h"
#include "server/http/exchange.h"

namespace vkllm::api {
namespace {

std::mutex hidden_mutex;
std::vector<std::string> hidden;  // with a trailing '/'

}  // namespace

void hide_path(const std::filesystem::path& dir) {
  std::vector<std::string> forms{dir.lexically_normal().string()};
  std::error_code ec;
  if (const auto canonical = std::filesystem::weakly_canonical(dir, ec); !ec) {
    forms.push_back(canonical.string());
  }
  std::lock_guard lock(hidden_mutex);
  for (auto f : forms) {
    while (f.size() > 1 && f.back() == '/') f.pop_back();
    if (f.empty() || f == "/") continue;
    f += '/';
    if (std::find(hidden.begin(), hidden.end(), f) == hidden.end()) hidden.push_back(f);
  }
  // Longest first, so a nested directory is cut as a whole.
  std::sort(hidden.begin(), hidden.end(),
            [](const auto& a, const auto& b) { return a.size() > b.size(); });
}

std::string error_message(const std::exception& e) {
  std::string message;
  if (const auto* h = dynamic_cast<const http::HttpError*>(&e)) {
    message = h->message();
  } else if (const auto* r = dynamic_cast<const registry::RegistryError*>(&e)) {
    message = r->message();
  } else {
    message = e.what();
  }
  std::lock_guard lock(hidden_mutex);
  for (const auto& dir : hidden) {
    for (size_t at = message.find(dir); at != std::string::npos; at = message.find(dir, at)) {
      message.erase(at, dir.size());
    }
  }
  return message;
}

unsigned error_status(const std::exception& e) {
  if (const auto* h = dynamic_cast<const http::HttpError*>(&e)) return h->status();
  // A registry that answered nonsense (a blob shorter than its manifest, a malformed answer):
  // the upstream failed, not this server.
  if (const auto* o = dynamic_cast<const registry::OciError*>(&e);
      o != nullptr && o->kind() == registry::OciErrorKind::protocol) {
    return 502;
  }
  if (const auto* r = dynamic_cast<const registry::RegistryError*>(&e)) {
    switch (r->kind()) {
      case registry::ErrorKind::invalid_name:
      case registry::ErrorKind::invalid_digest:
      case registry::ErrorKind::invalid_input:
      case registry::ErrorKind::digest_mismatch:
        return 400;
      case registry::ErrorKind::not_found:
        return 404;
      case registry::ErrorKind::corrupt:
      case registry::ErrorKind::io:
        return 500;
    }
  }
  return 500;
}

}  // namespace vkllm::api
