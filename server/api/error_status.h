// The HTTP status for an exception escaping a model-management operation: registry errors by
// their kind (bad input 400, absent 404, storage trouble 500), HttpError by its own status.
#pragma once

#include <exception>
#include <filesystem>
#include <string>

namespace vkllm::api {

unsigned error_status(const std::exception& e);

// The message a client sees for `e`: whole (past any NUL a name carried), with the server's
// private directories (see hide_path) cut out, so no absolute server path reaches a client.
std::string error_message(const std::exception& e);

// Registers a directory whose absolute path error messages must not show (the model store):
// "<dir>/blobs/tmp/x" appears as "blobs/tmp/x". Thread-safe.
void hide_path(const std::filesystem::path& dir);

}  // namespace vkllm::api
