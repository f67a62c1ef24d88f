// Compute pipelines built from the embedded SPIR-V (shaders/embedded_spirv.h) and cached by
// description, so each (shader, specialization) is compiled once per Device. Every creation goes
// through one VkPipelineCache, optionally kept on disk (pipeline_cache_file.h) so a restart does
// not compile again; build() compiles a list of descriptions on worker threads, and a Collector
// lets a caller find out which descriptions some recording code would ask for (see
// Runner::warm_up) without compiling anything.
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
#include <filesystem>
#include <memory>
#include <mutex>
#include <span>
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

struct CreationFeedback;

class Pipeline {
 public:
  // Compiles (or fetches from `cache`); fills `feedback` when given and the driver reports it.
  Pipeline(Device& device, const PipelineDesc& desc, VkPipelineCache cache = VK_NULL_HANDLE,
           CreationFeedback* feedback = nullptr);
  // A placeholder: `desc` is validated for the device but nothing is created. Only a
  // CommandRecorder in dry mode may record it.
  struct Placeholder {};
  Pipeline(const Device& device, const PipelineDesc& desc, Placeholder);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  VkPipeline handle() const { return pipeline_; }
  bool is_placeholder() const { return device_ == VK_NULL_HANDLE; }
  VkPipelineLayout layout() const { return layout_; }
  VkDescriptorSetLayout set_layout() const { return set_layout_; }
  const PipelineDesc& desc() const { return desc_; }
  bool uses_push_descriptors() const { return push_descriptors_; }

 private:
  void destroy();
  VkDevice device_ = VK_NULL_HANDLE;
  PipelineDesc desc_;
  bool push_descriptors_ = false;
  VkShaderModule module_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
};

// True if the embedded shader set has "<name>.spv".
bool has_shader(const std::string& name);

struct PipelineCacheOptions {
  std::filesystem::path dir;  // where the on-disk cache lives; empty: none
};

struct PipelineCacheStats {
  uint64_t created = 0;     // vkCreateComputePipelines calls that succeeded
  uint64_t cache_hits = 0;  // of those, found in the VkPipelineCache (creation feedback)
  bool feedback = false;    // whether the driver reports creation feedback at all
  double create_ms = 0;     // time spent creating pipelines, summed over threads
  double slowest_ms = 0;    // the slowest single creation (a parallel build's critical path)
  std::string slowest;      // its PipelineDesc::key()
  std::string disk;         // "off", "absent", "loaded", or "ignored: <why>"
  uint64_t loaded_bytes = 0;
  std::filesystem::path file;  // the cache file (empty when off)
};

// Builds pipelines on first use and keeps them for the Device's lifetime. Thread-safe. References
// returned by get() stay valid until the cache is destroyed.
class PipelineCache {
 public:
  explicit PipelineCache(Device& device, const PipelineCacheOptions& options = {});
  ~PipelineCache();  // saves the disk cache when pipelines were created since the last save()
  PipelineCache(const PipelineCache&) = delete;
  PipelineCache& operator=(const PipelineCache&) = delete;

  // Throws std::invalid_argument for an unknown shader or a description the device cannot run
  // (subgroup size not supported, push constants too large), VulkanError if creation fails.
  // While a Collector for this cache is alive on the calling thread, a description not yet
  // built is recorded and a placeholder returned instead.
  const Pipeline& get(const PipelineDesc& desc);
  // Creates every description not yet built, on up to `threads` worker threads (0: the
  // hardware's concurrency, at most 8). vkCreateComputePipelines is free-threaded and the
  // VkPipelineCache is internally synchronised, so the workers share both.
  void build(std::span<const PipelineDesc> descs, unsigned threads = 0);
  // Writes the disk cache (atomically) if there is one; returns false with the reason in
  // `error` when it could not be written.
  bool save(std::string* error = nullptr);

  Device& device() const { return device_; }
  size_t size() const;
  PipelineCacheStats stats() const;
  // The descriptions' keys of the pipelines built so far (sorted): what a warm-up missed.
  std::vector<std::string> keys() const;

  // Records the descriptions get() is asked for on this thread (and that are not built yet)
  // for as long as it lives.
  class Collector {
   public:
    explicit Collector(PipelineCache& cache);
    ~Collector();
    Collector(const Collector&) = delete;
    Collector& operator=(const Collector&) = delete;
    std::vector<PipelineDesc> descs() const;

   private:
    friend class PipelineCache;
    PipelineCache& cache_;
    Collector* previous_;
    std::unordered_map<std::string, std::unique_ptr<Pipeline>> placeholders_;
    std::vector<std::string> order_;
  };

 private:
  const Pipeline& create_locked(const std::string& key, const PipelineDesc& desc);
  void load_disk_cache();

  Device& device_;
  PipelineCacheOptions options_;
  VkPipelineCache vk_cache_ = VK_NULL_HANDLE;
  bool feedback_ = false;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<Pipeline>> pipelines_;
  PipelineCacheStats stats_;
  uint64_t saved_at_created_ = 0;
};

}  // namespace vkllm::vk
