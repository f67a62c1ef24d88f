// The HTTP status for an exception escaping a model-management operation: registry errors by
// their kind (bad input 400, absent 404, storage trouble 500), HttpError by its own status.
#pragma once

#include <exception>

namespace vkllm::api {

unsigned error_status(const std::exception& e);

}  // namespace vkllm::api
