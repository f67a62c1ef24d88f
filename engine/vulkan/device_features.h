// What a physical device offers and what vkllm turns on when it creates its VkDevice: the
// Vulkan 1.1/1.2/1.3 feature and property chains (with the pre-1.3 extension equivalents and both
// cooperative-matrix flavours) read into DeviceCapabilities, and the matching enable chain.
// Device (device.h) owns the instance, the VkDevice and its queue; this module only queries, so
// the version and extension juggling of feature detection stays out of device ownership.
#pragma once

#include <vulkan/vulkan.h>

#include <functional>
#include <vector>

#include "engine/vulkan/device.h"

namespace vkllm::vk {

// The core feature structures vkllm reads and enables: Vulkan 1.1/1.2/1.3 and, before 1.3, the
// extensions that carry the same features. Each starts zeroed with its sType set.
struct CoreFeatures {
  CoreFeatures();
  VkPhysicalDeviceFeatures2 f2;
  VkPhysicalDeviceVulkan11Features v11;
  VkPhysicalDeviceVulkan12Features v12;
  VkPhysicalDeviceVulkan13Features v13;
  VkPhysicalDeviceSubgroupSizeControlFeatures size;     // VK_EXT_subgroup_size_control
  VkPhysicalDeviceShaderIntegerDotProductFeatures dot;  // VK_KHR_shader_integer_dot_product
};

struct DeviceFeatures {
  DeviceCapabilities caps;
  VkPhysicalDeviceMemoryProperties memory{};
  // What the device offers (pNext cleared, so copies are safe): the enable chain copies from it,
  // since it turns on exactly what was found.
  bool vulkan13 = false;
  bool subgroup_size_ext = false;  // pre-1.3 devices: `offered.size` was queried
  bool integer_dot_ext = false;    // pre-1.3 devices: `offered.dot` was queried
  CoreFeatures offered;
};

// Reads everything `physical` offers into DeviceFeatures. Throws when the device lacks
// storageBuffer16BitAccess, which every vkllm kernel relies on.
DeviceFeatures probe_device_features(VkInstance instance, VkPhysicalDevice physical,
                                     uint32_t queue_family, const DeviceOptions& options);

// Builds the VkDeviceCreateInfo::pNext chain and extension list enabling every optional feature
// in `features` and nothing else, and hands them to `create` (the chain lives only that long).
void with_enabled_features(
    const DeviceFeatures& features,
    const std::function<void(void* chain, const std::vector<const char*>& extensions)>& create);

bool has_extension(const std::vector<VkExtensionProperties>& ext, const char* name);

}  // namespace vkllm::vk
