// The vkllm release version, shared by the CLI and /api/version.
#pragma once

#include <string_view>

namespace vkllm {
std::string_view version();
}
