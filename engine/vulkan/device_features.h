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

struct DeviceFeatures {
  DeviceCapabilities caps;
  VkPhysicalDeviceMemoryProperties memory{};
  // The queried feature structures (pNext cleared, so copies are safe): what the enable chain
  // copies from, since it turns on exactly what was found.
  bool vulkan13 = false;
  bool subgroup_size_ext = false;  // VK_EXT_subgroup_size_control (pre-1.3 devices)
  bool integer_dot_ext = false;    // VK_KHR_shader_integer_dot_product (pre-1.3 devices)
  VkPhysicalDeviceFeatures2 f2{};
  VkPhysicalDeviceVulkan11Features f11{};
  VkPhysicalDeviceVulkan12Features f12{};
  VkPhysicalDeviceVulkan13Features f13{};
  VkPhysicalDeviceSubgroupSizeControlFeatures fsize{};
  VkPhysicalDeviceShaderIntegerDotProductFeatures fdot{};
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
