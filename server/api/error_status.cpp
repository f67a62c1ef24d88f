#include "server/api/error_status.h"

#include "registry/errors.h"
#include "server/http/exchange.h"

namespace vkllm::api {

unsigned error_status(const std::exception& e) {
  if (const auto* h = dynamic_cast<const http::HttpError*>(&e)) return h->status();
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
