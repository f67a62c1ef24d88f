// The HTTP status for an exception escaping a model-management operation: registry errors by
// their kind (bad input 400, absent 404, storage trouble 500), HttpError by its own status.
#pragma once

#include <exception>
#include <string>

namespace vkllm::api {

unsigned error_status(const std::exception& e);

// The message a client sees for `e`: whole (past any NUL a name carried), with the server's
// private directories (http::hide_path) cut out, so no absolute server path reaches a client.
std::string error_message(const std::exception& e);

}  // namespace vkllm::api
