// Which backend serves generation: a GPU through Vulkan when there is one, else the CPU backend.
// Lavapipe (Vulkan on the CPU) is never chosen for serving unless VKLLM_DEVICE asks for Vulkan:
// the CPU backend runs the same models far faster on the same cores. The server and the
// in-process engine commands share this policy.
#pragma once

#include <span>
#include <string>

#include "engine/vulkan/device.h"

namespace vkllm::sched {

enum class Backend { Vulkan, Cpu };

struct DeviceChoice {
  Backend backend = Backend::Vulkan;
  // Backend::Vulkan: the device to open (an index or name; empty: the best device).
  std::string vulkan_selector;
  std::string reason;  // why, for the startup log
  // `base` with this choice's device selected (Backend::Vulkan).
  vk::DeviceOptions vulkan_options(vk::DeviceOptions base) const;
  std::string describe() const;  // one line: "CPU backend (no GPU; ...)"
};

// The policy, over the devices the loader reports.
DeviceChoice choose_device(const vk::DeviceRequest& request,
                           std::span<const vk::PhysicalDeviceInfo> devices);
// The same over this machine's devices (probes Vulkan; never throws for a missing driver).
DeviceChoice choose_device(const vk::DeviceRequest& request);

}  // namespace vkllm::sched
