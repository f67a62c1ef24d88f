#include "engine/vulkan/pipeline.h"

#include <cstring>
#include <stdexcept>
#include <string_view>

#include "engine/vulkan/device.h"
#include "engine/vulkan/vk_error.h"
#include "shaders/embedded_spirv.h"

namespace vkllm::vk {
namespace {

const shaders::EmbeddedFile* find_shader(const std::string& name) {
  const std::string file = name + ".spv";
  for (const auto& f : shaders::embedded_files())
    if (f.name && file == f.name) return &f;
  return nullptr;
}

}  // namespace

bool has_shader(const std::string& name) {
  return find_shader(name) != nullptr;
}

std::string PipelineDesc::key() const {
  std::string k = shader;
  for (uint32_t v :
       {num_buffers, push_constant_bytes, required_subgroup_size, uint32_t(full_subgroups)})
    k.append("|").append(std::to_string(v));
  for (uint32_t s : spec) k.append(",").append(std::to_string(s));
  return k;
}

Pipeline::Pipeline(Device& device, const PipelineDesc& desc)
    : device_(device.handle()), desc_(desc), push_descriptors_(device.caps().push_descriptors) {
  const shaders::EmbeddedFile* spv = find_shader(desc.shader);
  if (!spv) throw std::invalid_argument("no embedded shader named \"" + desc.shader + ".spv\"");
  const auto& caps = device.caps();
  if (desc.push_constant_bytes % 4 != 0 || desc.push_constant_bytes > caps.max_push_constants)
    throw std::invalid_argument("shader " + desc.shader + ": push constants of " +
                                std::to_string(desc.push_constant_bytes) +
                                " bytes (must be a multiple of 4, at most " +
                                std::to_string(caps.max_push_constants) + ")");
  if (desc.required_subgroup_size &&
      (!caps.subgroup_size_control || desc.required_subgroup_size < caps.min_subgroup_size ||
       desc.required_subgroup_size > caps.max_subgroup_size))
    throw std::invalid_argument("shader " + desc.shader + ": subgroup size " +
                                std::to_string(desc.required_subgroup_size) +
                                " is not selectable on this device");
  if (desc.full_subgroups && !caps.compute_full_subgroups)
    throw std::invalid_argument("shader " + desc.shader +
                                ": full subgroups requested but not supported");

  // The embedded bytes are not guaranteed 4-byte aligned; copy into words.
  std::vector<uint32_t> code((spv->size + 3) / 4);
  std::memcpy(code.data(), spv->data, spv->size);
  try {
    auto module_info = make<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
    module_info.codeSize = spv->size;
    module_info.pCode = code.data();
    check(vkCreateShaderModule(device_, &module_info, nullptr, &module_), "vkCreateShaderModule");

    std::vector<VkDescriptorSetLayoutBinding> bindings(desc.num_buffers);
    for (uint32_t i = 0; i < desc.num_buffers; ++i)
      bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    auto set_info =
        make<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
    if (push_descriptors_) set_info.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
    set_info.bindingCount = desc.num_buffers;
    set_info.pBindings = bindings.data();
    check(vkCreateDescriptorSetLayout(device_, &set_info, nullptr, &set_layout_),
          "vkCreateDescriptorSetLayout");

    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, desc.push_constant_bytes};
    auto layout_info =
        make<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
    layout_info.setLayoutCount = 1;
    layout_info.pSetLayouts = &set_layout_;
    layout_info.pushConstantRangeCount = desc.push_constant_bytes ? 1 : 0;
    layout_info.pPushConstantRanges = &range;
    check(vkCreatePipelineLayout(device_, &layout_info, nullptr, &layout_),
          "vkCreatePipelineLayout");

    std::vector<VkSpecializationMapEntry> entries(desc.spec.size());
    for (uint32_t i = 0; i < desc.spec.size(); ++i) entries[i] = {i, i * 4u, 4};
    VkSpecializationInfo spec_info{static_cast<uint32_t>(entries.size()), entries.data(),
                                   desc.spec.size() * 4, desc.spec.data()};
    auto subgroup_info = make<VkPipelineShaderStageRequiredSubgroupSizeCreateInfo>(
        VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO);
    subgroup_info.requiredSubgroupSize = desc.required_subgroup_size;

    auto info = make<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
    info.stage =
        make<VkPipelineShaderStageCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO);
    info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    info.stage.module = module_;
    info.stage.pName = "main";
    info.stage.pSpecializationInfo = desc.spec.empty() ? nullptr : &spec_info;
    if (desc.required_subgroup_size) info.stage.pNext = &subgroup_info;
    if (desc.full_subgroups)
      info.stage.flags |= VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
    info.layout = layout_;
    VkResult r = vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &info, nullptr, &pipeline_);
    if (r != VK_SUCCESS)
      throw VulkanError("vkCreateComputePipelines(" + desc.key() + "): " + result_name(r), r);
  } catch (...) {
    destroy();
    throw;
  }
}

Pipeline::~Pipeline() {
  destroy();
}

void Pipeline::destroy() {
  if (pipeline_) vkDestroyPipeline(device_, pipeline_, nullptr);
  if (layout_) vkDestroyPipelineLayout(device_, layout_, nullptr);
  if (set_layout_) vkDestroyDescriptorSetLayout(device_, set_layout_, nullptr);
  if (module_) vkDestroyShaderModule(device_, module_, nullptr);
  pipeline_ = VK_NULL_HANDLE;
  layout_ = VK_NULL_HANDLE;
  set_layout_ = VK_NULL_HANDLE;
  module_ = VK_NULL_HANDLE;
}

PipelineCache::PipelineCache(Device& device) : device_(device) {}
PipelineCache::~PipelineCache() = default;

const Pipeline& PipelineCache::get(const PipelineDesc& desc) {
  std::lock_guard lock(mutex_);
  std::string key = desc.key();
  auto it = pipelines_.find(key);
  if (it != pipelines_.end()) return *it->second;
  auto p = std::make_unique<Pipeline>(device_, desc);
  return *pipelines_.emplace(std::move(key), std::move(p)).first->second;
}

size_t PipelineCache::size() const {
  std::lock_guard lock(mutex_);
  return pipelines_.size();
}

}  // namespace vkllm::vk
