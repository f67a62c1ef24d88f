#include "engine/vulkan/pipeline.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "engine/vulkan/device.h"
#include "engine/vulkan/pipeline_cache_file.h"
#include "engine/vulkan/pipeline_statistics.h"
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

// Throws std::invalid_argument when `desc` cannot run on the device.
const shaders::EmbeddedFile& validate(const DeviceCapabilities& caps, const PipelineDesc& desc) {
  const shaders::EmbeddedFile* spv = find_shader(desc.shader);
  if (!spv) throw std::invalid_argument("no embedded shader named \"" + desc.shader + ".spv\"");
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
  return *spv;
}

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

}  // namespace

struct CreationFeedback {
  bool valid = false;
  bool cache_hit = false;
};

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

Pipeline::Pipeline(const Device& device, const PipelineDesc& desc, Placeholder)
    : desc_(desc), push_descriptors_(device.caps().push_descriptors) {
  validate(device.caps(), desc);
}

Pipeline::Pipeline(Device& device, const PipelineDesc& desc, VkPipelineCache cache,
                   CreationFeedback* feedback)
    : device_(device.handle()), desc_(desc), push_descriptors_(device.caps().push_descriptors) {
  const shaders::EmbeddedFile* spv = &validate(device.caps(), desc);
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
    VkPipelineCreationFeedback whole{}, stage{};
    auto fb = make<VkPipelineCreationFeedbackCreateInfo>(
        VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO);
    fb.pPipelineCreationFeedback = &whole;
    fb.pipelineStageCreationFeedbackCount = 1;
    fb.pPipelineStageCreationFeedbacks = &stage;
    if (feedback) info.pNext = &fb;
    const bool stats = device.caps().pipeline_stats;
    if (stats) info.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
    VkResult r = vkCreateComputePipelines(device_, cache, 1, &info, nullptr, &pipeline_);
    if (r != VK_SUCCESS)
      throw VulkanError("vkCreateComputePipelines(" + desc.key() + "): " + result_name(r), r);
    if (stats) print_pipeline_statistics(device_, pipeline_, desc.key());
    if (feedback) {
      feedback->valid = whole.flags & VK_PIPELINE_CREATION_FEEDBACK_VALID_BIT;
      feedback->cache_hit =
          whole.flags & VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT;
    }
  } catch (...) {
    destroy();
    throw;
  }
}

Pipeline::~Pipeline() {
  destroy();
}

void Pipeline::destroy() {
  if (!device_) return;
  if (pipeline_) vkDestroyPipeline(device_, pipeline_, nullptr);
  if (layout_) vkDestroyPipelineLayout(device_, layout_, nullptr);
  if (set_layout_) vkDestroyDescriptorSetLayout(device_, set_layout_, nullptr);
  if (module_) vkDestroyShaderModule(device_, module_, nullptr);
  pipeline_ = VK_NULL_HANDLE;
  layout_ = VK_NULL_HANDLE;
  set_layout_ = VK_NULL_HANDLE;
  module_ = VK_NULL_HANDLE;
}

namespace {
thread_local PipelineCache::Collector* t_collector = nullptr;
}

PipelineCache::PipelineCache(Device& device, const PipelineCacheOptions& options)
    : device_(device), options_(options) {
  uint32_t instance_version = VK_API_VERSION_1_0;
  vkEnumerateInstanceVersion(&instance_version);
  // Creation feedback is core in 1.3 (the instance asks for at most 1.3).
  feedback_ =
      instance_version >= VK_API_VERSION_1_3 && device.caps().api_version >= VK_API_VERSION_1_3;
  stats_.feedback = feedback_;
  load_disk_cache();
}

void PipelineCache::load_disk_cache() {
  std::vector<std::byte> initial;
  stats_.disk = "off";
  if (!options_.dir.empty()) {
    VkPhysicalDeviceProperties props{};
    vkGetPhysicalDeviceProperties(device_.physical(), &props);
    PipelineCacheKey key;
    key.vendor_id = props.vendorID;
    key.device_id = props.deviceID;
    key.driver_version = props.driverVersion;
    std::copy(std::begin(props.pipelineCacheUUID), std::end(props.pipelineCacheUUID),
              key.cache_uuid.begin());
    key.spirv_hash = embedded_spirv_hash();
    stats_.file = options_.dir / key.file_name();
    auto decoded = read_pipeline_cache_file(key, stats_.file);
    if (decoded.rejected.empty()) {
      initial = std::move(decoded.vulkan_data);
      stats_.disk = "loaded";
      stats_.loaded_bytes = initial.size();
    } else {
      stats_.disk = decoded.rejected == "absent" ? "absent" : "ignored: " + decoded.rejected;
    }
  }
  auto info = make<VkPipelineCacheCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO);
  info.initialDataSize = initial.size();
  info.pInitialData = initial.empty() ? nullptr : initial.data();
  VkResult r = vkCreatePipelineCache(device_.handle(), &info, nullptr, &vk_cache_);
  if (r != VK_SUCCESS && !initial.empty()) {
    // The header matched but the driver still refused the data: start empty.
    stats_.disk = "ignored: the driver refused the data (" + result_name(r) + ")";
    stats_.loaded_bytes = 0;
    info.initialDataSize = 0;
    info.pInitialData = nullptr;
    r = vkCreatePipelineCache(device_.handle(), &info, nullptr, &vk_cache_);
  }
  check(r, "vkCreatePipelineCache");
}

PipelineCache::~PipelineCache() {
  bool dirty;
  {
    std::lock_guard lock(mutex_);
    dirty = stats_.created > saved_at_created_;
  }
  if (dirty) save();
  pipelines_.clear();
  if (vk_cache_) vkDestroyPipelineCache(device_.handle(), vk_cache_, nullptr);
}

bool PipelineCache::save(std::string* error) {
  if (stats_.file.empty()) {
    if (error) *error = "no pipeline cache directory";
    return false;
  }
  try {
    uint64_t created;
    {
      std::lock_guard lock(mutex_);
      created = stats_.created;
    }
    size_t size = 0;
    check(vkGetPipelineCacheData(device_.handle(), vk_cache_, &size, nullptr),
          "vkGetPipelineCacheData");
    std::vector<std::byte> data(size);
    VkResult r = vkGetPipelineCacheData(device_.handle(), vk_cache_, &size, data.data());
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) check(r, "vkGetPipelineCacheData");
    data.resize(size);
    VkPhysicalDeviceProperties props{};
    vkGetPhysicalDeviceProperties(device_.physical(), &props);
    PipelineCacheKey key;
    key.vendor_id = props.vendorID;
    key.device_id = props.deviceID;
    key.driver_version = props.driverVersion;
    std::copy(std::begin(props.pipelineCacheUUID), std::end(props.pipelineCacheUUID),
              key.cache_uuid.begin());
    key.spirv_hash = embedded_spirv_hash();
    write_pipeline_cache_file(stats_.file, encode_pipeline_cache_file(key, data));
    std::lock_guard lock(mutex_);
    saved_at_created_ = std::max(saved_at_created_, created);
    return true;
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return false;
  }
}

const Pipeline& PipelineCache::create_locked(const std::string& key, const PipelineDesc& desc) {
  const auto t0 = Clock::now();
  CreationFeedback fb;
  auto p = std::make_unique<Pipeline>(device_, desc, vk_cache_, feedback_ ? &fb : nullptr);
  const double ms = ms_since(t0);
  stats_.create_ms += ms;
  if (ms > stats_.slowest_ms) {
    stats_.slowest_ms = ms;
    stats_.slowest = key;
  }
  ++stats_.created;
  if (fb.cache_hit) ++stats_.cache_hits;
  return *pipelines_.emplace(key, std::move(p)).first->second;
}

const Pipeline& PipelineCache::get(const PipelineDesc& desc) {
  std::lock_guard lock(mutex_);
  std::string key = desc.key();
  auto it = pipelines_.find(key);
  if (it != pipelines_.end()) return *it->second;
  // Collectors nest (a split model warms up each device's cache inside the one before): the
  // innermost one for this cache takes the description.
  Collector* c = t_collector;
  while (c && &c->cache_ != this) c = c->previous_;
  if (c) {
    auto [slot, fresh] = c->placeholders_.try_emplace(key);
    if (fresh) {
      slot->second = std::make_unique<Pipeline>(device_, desc, Pipeline::Placeholder{});
      c->order_.push_back(key);
    }
    return *slot->second;
  }
  return create_locked(key, desc);
}

void PipelineCache::build(std::span<const PipelineDesc> descs, unsigned threads) {
  std::vector<const PipelineDesc*> todo;
  {
    std::lock_guard lock(mutex_);
    std::unordered_map<std::string, bool> seen;
    for (const auto& d : descs) {
      std::string key = d.key();
      if (!pipelines_.contains(key) && seen.emplace(key, true).second) todo.push_back(&d);
    }
  }
  if (todo.empty()) return;
  if (threads == 0) threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  threads = std::min<unsigned>(threads, static_cast<unsigned>(todo.size()));
  std::atomic<size_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr error;
  auto work = [&] {
    for (size_t i; (i = next++) < todo.size();) {
      try {
        const auto t0 = Clock::now();
        CreationFeedback fb;
        auto p =
            std::make_unique<Pipeline>(device_, *todo[i], vk_cache_, feedback_ ? &fb : nullptr);
        const double ms = ms_since(t0);
        std::lock_guard lock(mutex_);
        stats_.create_ms += ms;
        if (ms > stats_.slowest_ms) {
          stats_.slowest_ms = ms;
          stats_.slowest = todo[i]->key();
        }
        ++stats_.created;
        if (fb.cache_hit) ++stats_.cache_hits;
        pipelines_.try_emplace(todo[i]->key(), std::move(p));
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
        next = todo.size();
      }
    }
  };
  {
    std::vector<std::jthread> workers;
    for (unsigned t = 1; t < threads; ++t) workers.emplace_back(work);
    work();
  }
  if (error) std::rethrow_exception(error);
}

size_t PipelineCache::size() const {
  std::lock_guard lock(mutex_);
  return pipelines_.size();
}

PipelineCacheStats PipelineCache::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::vector<std::string> PipelineCache::keys() const {
  std::vector<std::string> out;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [key, pipeline] : pipelines_) out.push_back(key);
  }
  std::sort(out.begin(), out.end());
  return out;
}

PipelineCache::Collector::Collector(PipelineCache& cache) : cache_(cache), previous_(t_collector) {
  t_collector = this;
}

PipelineCache::Collector::~Collector() {
  t_collector = previous_;
}

std::vector<PipelineDesc> PipelineCache::Collector::descs() const {
  std::vector<PipelineDesc> out;
  for (const auto& key : order_) out.push_back(placeholders_.at(key)->desc());
  return out;
}

}  // namespace vkllm::vk
