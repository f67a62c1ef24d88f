#include "server/api/error_status.h"

#include "registry/errors.h"
#include "registry/oci_error.h"
#include "server/http/exchange.h"
#include "server/http/private_paths.h"

namespace vkllm::api {

std::string error_message(const std::exception& e) {
  std::string message;
  if (const auto* h = dynamic_cast<const http::HttpError*>(&e)) {
    message = h->message();
  } else if (const auto* r = dynamic_cast<const registry::RegistryError*>(&e)) {
    message = r->message();
  } else {
    message = e.what();
  }
  return http::without_private_paths(std::move(message));
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
