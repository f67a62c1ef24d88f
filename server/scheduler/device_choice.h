// Which backend serves generation: a GPU through Vulkan when there is one, else the CPU backend.
// Lavapipe (Vulkan on the CPU) is never chosen for serving unless VKLLM_DEVICE asks for Vulkan:
// the CPU backend runs the same models far faster on the same cores. The server and the
// in-process engine commands share this policy.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/vulkan/device.h"

namespace vkllm::sched {

enum class Backend { Vulkan, Cpu };

struct DeviceChoice {
  Backend backend = Backend::Vulkan;
  // Backend::Vulkan: the device to open (an index or name; empty: the best device).
  std::string vulkan_selector;
  // Backend::Vulkan with several devices (a VKLLM_DEVICE list, or every GPU of the best kind
  // when there are several): each device's selector, in stage order, for models split by layers
  // across them (engine/runtime/split_model.h). Empty: one device. The first is vulkan_selector.
  std::vector<std::string> split_selectors;
  // OLLAMA_SCHED_SPREAD: every model split across the devices; otherwise, as Ollama, a model is
  // split only when it does not fit on the first device.
  bool spread = false;
  // VKLLM_SPLIT_MODE=row: split models share every layer out by rows (for the log line).
  bool by_rows = false;
  bool split() const { return split_selectors.size() > 1; }
  // Whether a model needing `need_bytes` (weights, activations, its least KV) is split, with
  // `first_device_bytes` of memory on the first device.
  bool splits(uint64_t need_bytes, uint64_t first_device_bytes) const {
    return split() && (spread || need_bytes > first_device_bytes);
  }
  std::string reason;  // why, for the startup log
  // `base` with this choice's device selected (Backend::Vulkan); with a split, device `i`.
  vk::DeviceOptions vulkan_options(vk::DeviceOptions base, size_t i = 0) const;
  std::string describe() const;  // one line: "CPU backend (no GPU; ...)"
};

// The policy, over the devices the loader reports (DeviceChoice::spread is the caller's: set it
// from OLLAMA_SCHED_SPREAD).
DeviceChoice choose_device(const vk::DeviceRequest& request,
                           std::span<const vk::PhysicalDeviceInfo> devices);
// The same over this machine's devices (probes Vulkan; never throws for a missing driver).
DeviceChoice choose_device(const vk::DeviceRequest& request);

}  // namespace vkllm::sched
