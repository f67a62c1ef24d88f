#include "engine/vulkan/vk_error.h"

namespace vkllm::vk {

VulkanError::VulkanError(const std::string& what, VkResult result)
    : std::runtime_error(what), result_(result) {}

std::string result_name(VkResult result) {
  switch (result) {
#define VKLLM_RESULT(x) \
  case x:               \
    return #x;
    VKLLM_RESULT(VK_SUCCESS)
    VKLLM_RESULT(VK_NOT_READY)
    VKLLM_RESULT(VK_TIMEOUT)
    VKLLM_RESULT(VK_INCOMPLETE)
    VKLLM_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    VKLLM_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    VKLLM_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    VKLLM_RESULT(VK_ERROR_DEVICE_LOST)
    VKLLM_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    VKLLM_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    VKLLM_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    VKLLM_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    VKLLM_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    VKLLM_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    VKLLM_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    VKLLM_RESULT(VK_ERROR_FRAGMENTED_POOL)
    VKLLM_RESULT(VK_ERROR_UNKNOWN)
    VKLLM_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    VKLLM_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    VKLLM_RESULT(VK_ERROR_FRAGMENTATION)
    VKLLM_RESULT(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    VKLLM_RESULT(VK_PIPELINE_COMPILE_REQUIRED)
    VKLLM_RESULT(VK_ERROR_INVALID_SHADER_NV)
#undef VKLLM_RESULT
    default:
      return "VkResult(" + std::to_string(static_cast<int>(result)) + ")";
  }
}

void check(VkResult result, const char* call) {
  if (result != VK_SUCCESS)
    throw VulkanError(std::string(call) + ": " + result_name(result), result);
}

}  // namespace vkllm::vk
