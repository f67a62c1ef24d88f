// Compute pipelines built from the embedded SPIR-V (shaders/embedded_spirv.h) and cached by
// description, so each (shader, specialization) is compiled once per Device.
//
// Shader interface convention (every vkllm compute shader follows it):
//   - storage buffers at set 0, bindings 0 .. num_buffers-1 (in the order a dispatch passes them);
//   - one push-constant block of push_constant_bytes at offset 0;
//   - specialization constants with constant_id 0, 1, 2, ... taking spec[0], spec[1], ...
//     (32-bit words: use spec_float() for floats; bools are 0/1). constant_id 0 is, by
//     convention, the workgroup size (local_size_x_id = 0).
#pragma once

#include <vulkan/vulkan.h>

#include <bit>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace vkllm::vk {

class Device;

struct PipelineDesc {
  std::string shader;                   // embedded variant name without ".spv", e.g. "fill"
  uint32_t num_buffers = 1;             // storage buffers at bindings 0..num_buffers-1
  uint32_t push_constant_bytes = 0;     // a multiple of 4, at most caps().max_push_constants
  std::vector<uint32_t> spec;           // specialization constants by constant_id
  uint32_t required_subgroup_size = 0;  // 0: driver's choice; else needs subgroup size control
  bool full_subgroups = false;          // require full subgroups (needs computeFullSubgroups)

  std::string key() const;  // unique text of everything above
};

inline uint32_t spec_float(float f) {
  return std::bit_cast<uint32_t>(f);
}

class Pipeline {
 public:
  Pipeline(Device& device, const PipelineDesc& desc);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  VkPipeline handle() const { return pipeline_; }
  VkPipelineLayout layout() const { return layout_; }
  VkDescriptorSetLayout set_layout() const { return set_layout_; }
  const PipelineDesc& desc() const { return desc_; }
  bool uses_push_descriptors() const { return push_descriptors_; }

 private:
  void destroy();
  VkDevice device_;
  PipelineDesc desc_;
  bool push_descriptors_ = false;
  VkShaderModule module_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
};

// True if the embedded shader set has "<name>.spv".
bool has_shader(const std::string& name);

// Builds pipelines on first use and keeps them for the Device's lifetime. Thread-safe. References
// returned by get() stay valid until the cache is destroyed.
class PipelineCache {
 public:
  explicit PipelineCache(Device& device);
  ~PipelineCache();
  PipelineCache(const PipelineCache&) = delete;
  PipelineCache& operator=(const PipelineCache&) = delete;

  // Throws std::invalid_argument for an unknown shader or a description the device cannot run
  // (subgroup size not supported, push constants too large), VulkanError if creation fails.
  const Pipeline& get(const PipelineDesc& desc);
  Device& device() const { return device_; }
  size_t size() const;

 private:
  Device& device_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<Pipeline>> pipelines_;
};

}  // namespace vkllm::vk
