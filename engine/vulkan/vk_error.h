// Vulkan error reporting: every failing call becomes a VulkanError naming the call and result.
#pragma once

#include <vulkan/vulkan.h>

#include <stdexcept>
#include <string>

namespace vkllm::vk {

class VulkanError : public std::runtime_error {
 public:
  VulkanError(const std::string& what, VkResult result);
  VkResult result() const { return result_; }

 private:
  VkResult result_;
};

// "VK_ERROR_OUT_OF_DEVICE_MEMORY" etc.; "VkResult(<n>)" for unknown codes.
std::string result_name(VkResult result);

// A zero-initialised Vulkan structure with its sType set.
template <typename T>
T make(VkStructureType type) {
  T s{};
  s.sType = type;
  return s;
}

// Throws VulkanError("<call>: <result name>") unless result is VK_SUCCESS.
void check(VkResult result, const char* call);

}  // namespace vkllm::vk
