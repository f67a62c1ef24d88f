#pragma once
// The driver's statistics of a compiled pipeline (VK_KHR_pipeline_executable_properties, which
// the device enables only with --tune pipeline_stats=1): a tuning aid for register pressure and
// occupancy, e.g. the registers per invocation that decide how many workgroups share an SM.
#include <vulkan/vulkan.h>

#include <string>

namespace vkllm::vk {

// One line per executable of `pipeline` on stderr: "vkllm: pipeline stats <label> [<executable>]
// <name>=<value> ...". Prints nothing where the driver answers nothing.
void print_pipeline_statistics(VkDevice device, VkPipeline pipeline, const std::string& label);

}  // namespace vkllm::vk
