// What a failed request answers, decided in this one place: the status and message any exception
// stands for (status_error_of: StatusError as thrown, the registry's and the engine's own
// exception types by what they mean), and the body in the error shape of the API the client
// speaks: Ollama's {"error": "..."}, OpenAI's {"error": {"message","type","param","code"}} and
// Anthropic's {"type":"error","error":{"type","message"}}, as a whole response or, once a stream
// has begun, as the stream's last line or event. The OCI registry view answers the OCI
// distribution shape, its own protocol (server/api/oci_view.cpp).
#pragma once

#include <exception>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/http/status_error.h"

namespace vkllm::http {

enum class ErrorShape { ollama, openai, anthropic };

// The shape a path's clients read: /v1/messages… Anthropic's, the rest of /v1/… OpenAI's,
// everything else Ollama's.
ErrorShape error_shape_of(std::string_view path);

// The status and client-safe message `e` answers with (the server's private directories cut
// out, http::hide_path):
//   StatusError                      its own status
//   registry::RegistryError          by kind: bad name, digest or input 400, not found 404,
//                                    corrupt data or I/O 500
//   registry::OciError (protocol)    502: the upstream registry answered nonsense
//   sampling::FormatError            400: the request's format, schema or grammar
//   prompt::TemplateError            500: the model's template fails
//   anything else                    500 with what()
// A layer that knows more (which model, which file) catches and throws a StatusError saying
// so; nothing else translates errors on their way up.
StatusError status_error_of(const std::exception& e);

// OpenAI's `type` for a status: invalid_request_error (400, and 401 as OpenAI answers a bad key),
// not_found_error (404), api_error otherwise (compat §0.3).
std::string openai_error_type(unsigned status);
// Anthropic's: invalid_request_error (400), authentication_error (401), permission_error (403),
// not_found_error (404), request_too_large (413), rate_limit_error (429), overloaded_error (503,
// 529), api_error otherwise.
std::string anthropic_error_type(unsigned status);

// The error object in `shape`.
nlohmann::ordered_json error_json(ErrorShape shape, const StatusError& e);
// A whole response's body (compact JSON).
std::string error_body(ErrorShape shape, const StatusError& e);
// The end of a stream that fails after it began: Ollama's final NDJSON line, OpenAI's SSE data
// event, Anthropic's `error` event.
std::string stream_error(ErrorShape shape, const StatusError& e);

}  // namespace vkllm::http
