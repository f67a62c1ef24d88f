#include "server/scheduler/device_choice.h"

#include <algorithm>

namespace vkllm::sched {

namespace {

int gpu_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return 1;
    default:
      return 2;  // virtual
  }
}

std::string device_list(std::span<const vk::PhysicalDeviceInfo> devices) {
  if (devices.empty()) return "no Vulkan device";
  std::string s = "Vulkan devices:";
  for (const auto& d : devices) {
    s += " [" + std::to_string(d.index) + "] " + d.name + " (" +
         vk::physical_device_type_name(d.type) + (d.usable ? "" : ", unusable") +
         (d.group_size > 1 ? ", device group of " + std::to_string(d.group_size) : "") + ")";
  }
  return s;
}

}  // namespace

vk::DeviceOptions DeviceChoice::vulkan_options(vk::DeviceOptions base, size_t i) const {
  base.selector = i < split_selectors.size() ? split_selectors[i] : vulkan_selector;
  // The device summary is logged once, for the first.
  if (i > 0) base.log_summary = false;
  return base;
}

std::string DeviceChoice::describe() const {
  if (backend == Backend::Vulkan && split()) {
    std::string list;
    for (const auto& s : split_selectors) list += (list.empty() ? "" : ",") + s;
    return "Vulkan devices " + list + ", " +
           (spread ? "every model" : "models larger than device " + split_selectors.front()) +
           (by_rows ? " split by rows (" : " split by layers (") + reason + ")";
  }
  if (backend == Backend::Vulkan) {
    return "Vulkan" + (vulkan_selector.empty() ? "" : " device " + vulkan_selector) + " (" +
           reason + ")";
  }
  return "CPU backend (" + reason + ")";
}

DeviceChoice choose_device(const vk::DeviceRequest& request,
                           std::span<const vk::PhysicalDeviceInfo> devices) {
  DeviceChoice c;
  const std::string seen = device_list(devices);
  switch (request.kind) {
    case vk::DeviceRequest::Kind::Cpu:
      c.backend = Backend::Cpu;
      c.reason = "VKLLM_DEVICE=cpu; " + seen;
      return c;
    case vk::DeviceRequest::Kind::Vulkan:
      c.vulkan_selector = request.selector;
      c.split_selectors = request.split;
      c.reason = "VKLLM_DEVICE=" + request.str() + "; " + seen;
      return c;
    case vk::DeviceRequest::Kind::Auto:
      break;
  }
  const vk::PhysicalDeviceInfo* gpu = nullptr;
  for (const auto& d : devices) {
    if (d.usable && d.is_gpu() && (!gpu || gpu_rank(d.type) < gpu_rank(gpu->type))) gpu = &d;
  }
  if (gpu) {
    c.vulkan_selector = std::to_string(gpu->index);
    c.reason = "GPU \"" + gpu->name + "\"; " + seen;
    for (const auto& d : devices) {
      if (d.usable && d.is_gpu() && gpu_rank(d.type) == gpu_rank(gpu->type))
        c.split_selectors.push_back(std::to_string(d.index));
    }
    if (c.split_selectors.size() < 2) c.split_selectors.clear();
    if (c.split()) {  // the best one (the first of its kind) first
      c.reason = std::to_string(c.split_selectors.size()) + " GPUs \"" + gpu->name + "\"; " + seen;
    }
    return c;
  }
  c.backend = Backend::Cpu;
  c.reason = "no GPU; " + seen;
  return c;
}

DeviceChoice choose_device(const vk::DeviceRequest& request) {
  std::string error;
  const auto devices = vk::probe_physical_devices(&error);
  DeviceChoice c = choose_device(request, devices);
  if (devices.empty() && !error.empty()) c.reason += " (" + error + ")";
  return c;
}

}  // namespace vkllm::sched
