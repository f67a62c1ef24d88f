#include "engine/vulkan/pipeline_statistics.h"

#include <cstdio>
#include <vector>

#include "engine/vulkan/vk_error.h"

namespace vkllm::vk {
namespace {

// Vulkan's count-then-fill enumeration; empty on any error.
template <typename T, typename Get, typename Info>
std::vector<T> enumerate(Get get, VkDevice device, const Info& info, VkStructureType type) {
  uint32_t n = 0;
  if (get(device, &info, &n, nullptr) != VK_SUCCESS) return {};
  std::vector<T> out(n, make<T>(type));
  if (get(device, &info, &n, out.data()) != VK_SUCCESS) return {};
  out.resize(n);
  return out;
}

std::string value_text(const VkPipelineExecutableStatisticKHR& s) {
  switch (s.format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
      return std::to_string(s.value.b32);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
      return std::to_string(s.value.i64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
      return std::to_string(s.value.u64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR:
      return std::to_string(s.value.f64);
    default:
      return "?";
  }
}

}  // namespace

void print_pipeline_statistics(VkDevice device, VkPipeline pipeline, const std::string& label) {
  auto get_props = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
      vkGetDeviceProcAddr(device, "vkGetPipelineExecutablePropertiesKHR"));
  auto get_stats = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
      vkGetDeviceProcAddr(device, "vkGetPipelineExecutableStatisticsKHR"));
  if (!get_props || !get_stats) return;
  auto pinfo = make<VkPipelineInfoKHR>(VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR);
  pinfo.pipeline = pipeline;
  const auto executables = enumerate<VkPipelineExecutablePropertiesKHR>(
      get_props, device, pinfo, VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR);
  for (uint32_t e = 0; e < executables.size(); ++e) {
    auto einfo = make<VkPipelineExecutableInfoKHR>(VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR);
    einfo.pipeline = pipeline;
    einfo.executableIndex = e;
    std::string line = "vkllm: pipeline stats " + label + " [" + executables[e].name + "]";
    for (const auto& s : enumerate<VkPipelineExecutableStatisticKHR>(
             get_stats, device, einfo, VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR))
      line += std::string(" ") + s.name + "=" + value_text(s);
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

}  // namespace vkllm::vk
