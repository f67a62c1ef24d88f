#include "engine/vulkan/device.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "engine/vulkan/device_features.h"
#include "engine/vulkan/vk_error.h"

namespace vkllm::vk {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

UniqueHandle<VkInstance> create_instance(bool validation) {
  uint32_t loader_version = VK_API_VERSION_1_0;
  vkEnumerateInstanceVersion(&loader_version);
  if (loader_version < VK_API_VERSION_1_2)
    throw std::runtime_error(
        "Vulkan loader supports only API " + std::to_string(VK_API_VERSION_MAJOR(loader_version)) +
        "." + std::to_string(VK_API_VERSION_MINOR(loader_version)) + "; vkllm needs Vulkan 1.2");
  auto app = make<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
  app.pApplicationName = "vkllm";
  app.pEngineName = "vkllm";
  app.apiVersion = std::min<uint32_t>(loader_version, VK_API_VERSION_1_3);

  uint32_t n = 0;
  vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> ext(n);
  vkEnumerateInstanceExtensionProperties(nullptr, &n, ext.data());
  std::vector<const char*> extensions;
  auto info = make<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
  if (has_extension(ext, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
    extensions.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
    info.flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
  }
  std::vector<const char*> layers;
  if (validation) {
    vkEnumerateInstanceLayerProperties(&n, nullptr);
    std::vector<VkLayerProperties> props(n);
    vkEnumerateInstanceLayerProperties(&n, props.data());
    for (auto& l : props)
      if (!std::strcmp(l.layerName, "VK_LAYER_KHRONOS_validation"))
        layers.push_back("VK_LAYER_KHRONOS_validation");
    if (layers.empty()) std::cerr << "vkllm: VK_LAYER_KHRONOS_validation not installed\n";
  }
  info.pApplicationInfo = &app;
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  info.enabledLayerCount = static_cast<uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  VkInstance instance = VK_NULL_HANDLE;
  check(vkCreateInstance(&info, nullptr, &instance), "vkCreateInstance");
  return {instance, [](VkInstance i) { vkDestroyInstance(i, nullptr); }};
}

std::vector<VkPhysicalDevice> physical_devices(VkInstance instance) {
  uint32_t n = 0;
  check(vkEnumeratePhysicalDevices(instance, &n, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> devices(n);
  check(vkEnumeratePhysicalDevices(instance, &n, devices.data()), "vkEnumeratePhysicalDevices");
  return devices;
}

int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return 3;
    default:
      return 4;
  }
}

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "CPU";
    default:
      return "other";
  }
}

// Compute queue family, preferring one without graphics (a dedicated compute queue); -1 if none.
int compute_queue_family(VkPhysicalDevice pd) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, families.data());
  int any = -1;
  for (uint32_t i = 0; i < n; ++i) {
    if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    if (!(families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) return static_cast<int>(i);
    if (any < 0) any = static_cast<int>(i);
  }
  int best = any;
  return best;
}

std::string version_string(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) +
         "." + std::to_string(VK_API_VERSION_PATCH(v));
}

std::string bytes_string(VkDeviceSize b) {
  std::ostringstream s;
  if (b >= (VkDeviceSize(1) << 30))
    s << double(b) / double(1 << 30) << " GiB";
  else if (b >= (1u << 20))
    s << double(b) / double(1 << 20) << " MiB";
  else
    s << b / 1024.0 << " KiB";
  return s.str();
}

}  // namespace

DeviceRequest DeviceRequest::parse(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  const std::string l = lower(std::string(text));
  DeviceRequest r;
  if (l.empty() || l == "auto") return r;
  if (l == "cpu") {
    r.kind = Kind::Cpu;
    return r;
  }
  r.kind = Kind::Vulkan;
  if (l == "vulkan") return r;
  std::string_view rest = l.starts_with("vulkan:") ? text.substr(7) : text;
  if (rest.empty())
    throw std::invalid_argument("VKLLM_DEVICE=\"vulkan:\" names no device (vulkan:<index>)");
  if (rest.find(',') == std::string_view::npos) {
    r.selector = std::string(rest);  // a bare index or name, as before "vulkan:" existed
    return r;
  }
  // A list: the devices a model is split across, each an index or name (vulkan: optional).
  while (true) {
    const size_t comma = rest.find(',');
    std::string_view part = rest.substr(0, comma);
    while (!part.empty() && std::isspace(static_cast<unsigned char>(part.front())))
      part.remove_prefix(1);
    while (!part.empty() && std::isspace(static_cast<unsigned char>(part.back())))
      part.remove_suffix(1);
    if (lower(std::string(part.substr(0, 7))) == "vulkan:") part.remove_prefix(7);
    if (part.empty()) {
      throw std::invalid_argument("VKLLM_DEVICE=\"" + std::string(text) +
                                  "\": an empty entry in the device list");
    }
    r.split.emplace_back(part);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  r.selector = r.split.front();
  return r;
}

std::string DeviceRequest::str() const {
  switch (kind) {
    case Kind::Auto:
      return "auto";
    case Kind::Cpu:
      return "cpu";
    case Kind::Vulkan: {
      if (split.empty()) return selector.empty() ? "vulkan" : "vulkan:" + selector;
      std::string s = "vulkan:";
      for (size_t i = 0; i < split.size(); ++i) s += (i ? "," : "") + split[i];
      return s;
    }
  }
  return "auto";
}

std::vector<std::string> list_physical_devices() {
  auto instance = create_instance(false);
  std::vector<std::string> names;
  for (VkPhysicalDevice pd : physical_devices(instance.get())) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(pd, &p);
    names.push_back(std::string(p.deviceName) + " (" + type_name(p.deviceType) + ", Vulkan " +
                    version_string(p.apiVersion) + ")");
  }
  return names;
}

std::vector<PhysicalDeviceInfo> probe_physical_devices(std::string* error) noexcept {
  std::vector<PhysicalDeviceInfo> out;
  try {
    auto instance = create_instance(false);
    const auto devices = physical_devices(instance.get());
    uint32_t n_groups = 0;
    check(vkEnumeratePhysicalDeviceGroups(instance.get(), &n_groups, nullptr),
          "vkEnumeratePhysicalDeviceGroups");
    std::vector<VkPhysicalDeviceGroupProperties> groups(
        n_groups, {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_GROUP_PROPERTIES, nullptr, 0, {}, VK_FALSE});
    check(vkEnumeratePhysicalDeviceGroups(instance.get(), &n_groups, groups.data()),
          "vkEnumeratePhysicalDeviceGroups");
    for (size_t i = 0; i < devices.size(); ++i) {
      VkPhysicalDeviceProperties p;
      vkGetPhysicalDeviceProperties(devices[i], &p);
      out.push_back({static_cast<uint32_t>(i), p.deviceName, p.deviceType,
                     p.apiVersion >= VK_API_VERSION_1_2 && compute_queue_family(devices[i]) >= 0});
      for (const auto& g : groups) {
        if (std::find(g.physicalDevices, g.physicalDevices + g.physicalDeviceCount, devices[i]) !=
            g.physicalDevices + g.physicalDeviceCount)
          out.back().group_size = g.physicalDeviceCount;
      }
    }
  } catch (const std::exception& e) {
    // No loader, no driver (VK_ERROR_INCOMPATIBLE_DRIVER), or a loader older than 1.2: no devices.
    if (error) *error = e.what();
    out.clear();
  }
  return out;
}

const char* physical_device_type_name(VkPhysicalDeviceType type) {
  return type_name(type);
}

bool DeviceCapabilities::nv_f16_mma_16() const {
  return nv_cooperative_matrix &&
         std::any_of(nv_coopmat_shapes.begin(), nv_coopmat_shapes.end(), [](const auto& s) {
           return s.m == 16 && s.n == 16 && s.k == 16 && s.a_type == "f16" && s.b_type == "f16" &&
                  s.c_type == "f32" && s.result_type == "f32";
         });
}

std::string DeviceCapabilities::summary() const {
  std::ostringstream s;
  s << "vkllm: Vulkan device \"" << name << "\" (" << type_name(type) << ", Vulkan "
    << version_string(api_version) << ", driver " << driver << ")\n";
  s << "  arithmetic: float16=" << shader_float16 << " int8=" << shader_int8
    << " int16=" << shader_int16 << " int64=" << shader_int64
    << "; storage: 16-bit=" << storage_16bit << " 8-bit=" << storage_8bit << "\n";
  s << "  subgroup: size " << subgroup_size << " (" << min_subgroup_size << ".."
    << max_subgroup_size << "), size control=" << subgroup_size_control
    << " full=" << compute_full_subgroups << ", ops:";
  const std::pair<VkSubgroupFeatureFlagBits, const char*> ops[] = {
      {VK_SUBGROUP_FEATURE_BASIC_BIT, "basic"},
      {VK_SUBGROUP_FEATURE_VOTE_BIT, "vote"},
      {VK_SUBGROUP_FEATURE_ARITHMETIC_BIT, "arithmetic"},
      {VK_SUBGROUP_FEATURE_BALLOT_BIT, "ballot"},
      {VK_SUBGROUP_FEATURE_SHUFFLE_BIT, "shuffle"},
      {VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT, "shuffle_relative"},
      {VK_SUBGROUP_FEATURE_CLUSTERED_BIT, "clustered"},
      {VK_SUBGROUP_FEATURE_QUAD_BIT, "quad"}};
  for (auto& [bit, n] : ops)
    if (subgroup_ops & bit) s << ' ' << n;
  s << "\n  integer dot product=" << integer_dot_product << " (int8x4 accelerated "
    << int8_dot_accelerated << "), push descriptors=" << push_descriptors
    << ", timeline semaphores=" << timeline_semaphores
    << ", buffer device address=" << buffer_device_address << "\n";
  s << "  cooperative matrix (KHR)=" << cooperative_matrix;
  for (auto& c : coopmat_shapes)
    s << " [" << c.m << "x" << c.n << "x" << c.k << " " << c.a_type << "*" << c.b_type << "+"
      << c.c_type << "->" << c.result_type << "]";
  s << "\n  cooperative matrix 2 (NV)=" << nv_cooperative_matrix2;
  if (coopmat2_gemm())
    s << " [workgroup f16*f16+f32->f32, 128 invocations, granularity " << coopmat2_granularity_m
      << "x" << coopmat2_granularity_n << "x" << coopmat2_granularity_k << "]";
  s << "\n  cooperative matrix (NV)=" << nv_cooperative_matrix;
  for (auto& c : nv_coopmat_shapes)
    s << " [" << c.m << "x" << c.n << "x" << c.k << " " << c.a_type << "*" << c.b_type << "+"
      << c.c_type << "->" << c.result_type << "]";
  s << "\n  limits: shared memory " << bytes_string(max_shared_memory) << ", workgroup "
    << max_workgroup_invocations << " invocations (" << max_workgroup_size[0] << ","
    << max_workgroup_size[1] << "," << max_workgroup_size[2] << "), push constants "
    << max_push_constants << " B, storage range " << bytes_string(max_storage_buffer_range)
    << ", allocation " << bytes_string(max_allocation_size) << ", buffer "
    << bytes_string(max_buffer_size) << ", device-local heap " << bytes_string(device_local_bytes)
    << ", offset alignment " << storage_buffer_alignment << ", timestamps=" << timestamps
    << ", compute units " << compute_units << "\n";
  return s.str();
}

Device::Device(const DeviceOptions& options) : tuning_(options.tuning) {
  instance_ = create_instance(options.validation);
  auto devices = physical_devices(instance_.get());
  if (devices.empty()) throw std::runtime_error("no Vulkan physical device found");

  std::vector<VkPhysicalDeviceProperties> props(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) vkGetPhysicalDeviceProperties(devices[i], &props[i]);
  auto usable = [&](size_t i) {
    return props[i].apiVersion >= VK_API_VERSION_1_2 && compute_queue_family(devices[i]) >= 0;
  };
  int chosen = -1;
  if (!options.selector.empty()) {
    const std::string& sel = options.selector;
    bool numeric =
        std::all_of(sel.begin(), sel.end(), [](unsigned char c) { return std::isdigit(c); });
    for (size_t i = 0; i < devices.size() && chosen < 0; ++i) {
      bool match = numeric ? std::stoul(sel) == i
                           : lower(props[i].deviceName).find(lower(sel)) != std::string::npos;
      if (match) chosen = static_cast<int>(i);
    }
    if (chosen < 0) {
      std::string names;
      for (size_t i = 0; i < devices.size(); ++i)
        names += " [" + std::to_string(i) + "] " + props[i].deviceName;
      throw std::runtime_error("VKLLM_DEVICE=\"" + sel +
                               "\" matches no Vulkan device; found:" + names);
    }
    if (!usable(chosen))
      throw std::runtime_error(std::string("Vulkan device \"") + props[chosen].deviceName +
                               "\" lacks Vulkan 1.2 or a compute queue");
  } else {
    for (size_t i = 0; i < devices.size(); ++i)
      if (usable(i) &&
          (chosen < 0 || type_rank(props[i].deviceType) < type_rank(props[chosen].deviceType)))
        chosen = static_cast<int>(i);
    if (chosen < 0) throw std::runtime_error("no Vulkan 1.2 device with a compute queue found");
  }
  physical_ = devices[chosen];
  queue_family_ = static_cast<uint32_t>(compute_queue_family(physical_));

  // What the device offers; every optional feature found is enabled, nothing else.
  DeviceFeatures features =
      probe_device_features(instance_.get(), physical_, queue_family_, options);
  caps_ = std::move(features.caps);
  memory_ = features.memory;
  with_enabled_features(features, [&](void* chain, const std::vector<const char*>& extensions) {
    const float priority = 1.0f;
    auto queue_info = make<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
    queue_info.queueFamilyIndex = queue_family_;
    queue_info.queueCount = 1;
    queue_info.pQueuePriorities = &priority;
    auto info = make<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
    info.pNext = chain;
    info.queueCreateInfoCount = 1;
    info.pQueueCreateInfos = &queue_info;
    info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
    info.ppEnabledExtensionNames = extensions.data();
    check(vkCreateDevice(physical_, &info, nullptr, &device_), "vkCreateDevice");
  });
  vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
  if (caps_.push_descriptors)
    push_descriptor_fn_ = reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(
        vkGetDeviceProcAddr(device_, "vkCmdPushDescriptorSetKHR"));
  caps_.push_descriptors = push_descriptor_fn_ != nullptr;

  auto pool_info = make<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  pool_info.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
  pool_info.queueFamilyIndex = queue_family_;
  auto fence_info = make<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
  try {
    check(vkCreateCommandPool(device_, &pool_info, nullptr, &once_pool_), "vkCreateCommandPool");
    check(vkCreateFence(device_, &fence_info, nullptr, &once_fence_), "vkCreateFence");
  } catch (...) {
    if (once_pool_) vkDestroyCommandPool(device_, once_pool_, nullptr);
    vkDestroyDevice(device_, nullptr);
    throw;
  }

  static std::once_flag logged;
  if (options.log_summary) std::call_once(logged, [&] { std::cerr << caps_.summary(); });
}

Device::~Device() {
  if (device_) {
    vkDeviceWaitIdle(device_);
    vkDestroyFence(device_, once_fence_, nullptr);
    vkDestroyCommandPool(device_, once_pool_, nullptr);
    vkDestroyDevice(device_, nullptr);
  }
}

uint32_t Device::memory_type(uint32_t type_bits, VkMemoryPropertyFlags required,
                             VkMemoryPropertyFlags preferred) const {
  int best = -1;
  int best_score = -1;
  for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
    if (!(type_bits & (1u << i))) continue;
    VkMemoryPropertyFlags f = memory_.memoryTypes[i].propertyFlags;
    if ((f & required) != required) continue;
    int score = __builtin_popcount(f & preferred);
    if (score > best_score) {
      best = static_cast<int>(i);
      best_score = score;
    }
  }
  if (best < 0)
    throw std::runtime_error("no Vulkan memory type with property flags 0x" +
                             [&] {
                               std::ostringstream s;
                               s << std::hex << required;
                               return s.str();
                             }() +
                             " among type bits 0x" + std::to_string(type_bits));
  return static_cast<uint32_t>(best);
}

VkMemoryPropertyFlags Device::memory_flags(uint32_t memory_type) const {
  return memory_.memoryTypes[memory_type].propertyFlags;
}

void Device::submit(const VkSubmitInfo& info, VkFence fence) {
  std::lock_guard lock(queue_mutex_);
  check(vkQueueSubmit(queue_, 1, &info, fence), "vkQueueSubmit");
}

void Device::run_once(const std::function<void(VkCommandBuffer)>& record) {
  std::lock_guard lock(once_mutex_);
  auto alloc = make<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
  alloc.commandPool = once_pool_;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  check(vkAllocateCommandBuffers(device_, &alloc, &cb), "vkAllocateCommandBuffers");
  UniqueHandle<VkCommandBuffer> owner(
      cb, [this](VkCommandBuffer c) { vkFreeCommandBuffers(device_, once_pool_, 1, &c); });
  auto begin = make<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(cb, &begin), "vkBeginCommandBuffer");
  record(cb);
  auto to_host = make<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  to_host.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, nullptr, 0, nullptr);
  check(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
  auto submit_info = make<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  submit_info.commandBufferCount = 1;
  submit_info.pCommandBuffers = &cb;
  check(vkResetFences(device_, 1, &once_fence_), "vkResetFences");
  submit(submit_info, once_fence_);
  check(vkWaitForFences(device_, 1, &once_fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
}

void Device::wait_idle() {
  check(vkDeviceWaitIdle(device_), "vkDeviceWaitIdle");
}

}  // namespace vkllm::vk

namespace vkllm::vk {

Device::MemoryBudget Device::memory_budget() const {
  auto budget = make<VkPhysicalDeviceMemoryBudgetPropertiesEXT>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT);
  auto props = make<VkPhysicalDeviceMemoryProperties2>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2);
  if (caps_.memory_budget) props.pNext = &budget;
  vkGetPhysicalDeviceMemoryProperties2(physical_, &props);
  MemoryBudget out;
  uint64_t best_size = 0;
  for (uint32_t i = 0; i < props.memoryProperties.memoryHeapCount; ++i) {
    const auto& heap = props.memoryProperties.memoryHeaps[i];
    if (!(heap.flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) || heap.size < best_size) continue;
    best_size = heap.size;
    out.budget = caps_.memory_budget ? budget.heapBudget[i] : heap.size;
    out.usage = caps_.memory_budget ? budget.heapUsage[i] : 0;
  }
  return out;
}

}  // namespace vkllm::vk
