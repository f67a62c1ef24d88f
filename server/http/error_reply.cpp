#include "server/http/error_reply.h"

#include "engine/sampling/token_constraint.h"
#include "registry/errors.h"
#include "registry/oci_error.h"
#include "server/http/json_text.h"
#include "server/http/private_paths.h"
#include "server/http/streams.h"
#include "server/prompt/prompt.h"

namespace vkllm::http {

namespace {

using J = nlohmann::ordered_json;

unsigned registry_kind_status(registry::ErrorKind kind) {
  switch (kind) {
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
  return 500;
}

StatusError status_of_exception(const std::exception& e) {
  if (const auto* s = dynamic_cast<const StatusError*>(&e)) return *s;
  if (const auto* r = dynamic_cast<const registry::RegistryError*>(&e)) {
    return StatusError(registry_kind_status(r->kind()), r->message());
  }
  if (const auto* o = dynamic_cast<const registry::OciError*>(&e);
      o != nullptr && o->kind() == registry::OciErrorKind::protocol) {
    return StatusError(502, e.what());
  }
  if (dynamic_cast<const sampling::FormatError*>(&e) != nullptr) return StatusError(400, e.what());
  if (dynamic_cast<const prompt::TemplateError*>(&e) != nullptr) return StatusError(500, e.what());
  return StatusError(500, e.what());
}

}  // namespace

ErrorShape error_shape_of(std::string_view path) {
  if (path == "/v1/messages" || path.starts_with("/v1/messages/")) return ErrorShape::anthropic;
  if (path.starts_with("/v1/")) return ErrorShape::openai;
  return ErrorShape::ollama;
}

StatusError status_error_of(const std::exception& e) {
  const StatusError s = status_of_exception(e);
  return StatusError(s.status(), without_private_paths(s.message()), s.code());
}

std::string openai_error_type(unsigned status) {
  // OpenAI answers a missing or wrong key with invalid_request_error (code invalid_api_key).
  if (status == 400 || status == 401) return "invalid_request_error";
  if (status == 404) return "not_found_error";
  return "api_error";
}

std::string anthropic_error_type(unsigned status) {
  switch (status) {
    case 400:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
    case 529:
      return "overloaded_error";
    default:
      return "api_error";
  }
}

J error_json(ErrorShape shape, const StatusError& e) {
  switch (shape) {
    case ErrorShape::openai: {
      J inner;
      inner["message"] = e.message();
      inner["type"] = openai_error_type(e.status());
      inner["param"] = nullptr;
      inner["code"] = e.code().empty() ? J(nullptr) : J(e.code());
      return J{{"error", std::move(inner)}};
    }
    case ErrorShape::anthropic: {
      J inner;
      inner["type"] = anthropic_error_type(e.status());
      inner["message"] = e.message();
      return J{{"type", "error"}, {"error", std::move(inner)}};
    }
    case ErrorShape::ollama:
      break;
  }
  return J{{"error", e.message()}};
}

std::string error_body(ErrorShape shape, const StatusError& e) {
  return json_text(error_json(shape, e));
}

std::string stream_error(ErrorShape shape, const StatusError& e) {
  switch (shape) {
    case ErrorShape::openai:
      return sse_data(error_json(shape, e));
    case ErrorShape::anthropic:
      return sse_event("error", error_json(shape, e));
    case ErrorShape::ollama:
      break;
  }
  return ndjson_line(error_json(shape, e));
}

}  // namespace vkllm::http
