// Timestamps as Go's time.Time marshals them: RFC 3339 with up to 9 fractional digits, trailing
// zeros trimmed; local time with its offset (modified_at, expires_at) or UTC with "Z".
#pragma once

#include <chrono>
#include <string>

namespace vkllm::api {

std::string rfc3339_local(std::chrono::system_clock::time_point t);
std::string rfc3339_utc(std::chrono::system_clock::time_point t);

}  // namespace vkllm::api
