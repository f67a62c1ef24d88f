#include "engine/engine_version.h"

namespace vkllm {
std::string_view version() {
  return VKLLM_VERSION;
}
}  // namespace vkllm
