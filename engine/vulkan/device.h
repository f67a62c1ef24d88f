// The Vulkan device vkllm computes on: instance + physical device choice + one compute queue,
// and what that device can do (DeviceCapabilities), detected once at creation.
//
// Choice: VKLLM_DEVICE=vulkan:<index> or vulkan:<name substring> (case-insensitive; the bare
// index or name as well) picks a device explicitly; otherwise the best by type (discrete >
// integrated > virtual > CPU, i.e. lavapipe last). Whether to compute on Vulkan at all, or on
// the CPU backend, is the caller's policy (DeviceRequest says what VKLLM_DEVICE asks for).
// Required: Vulkan 1.2, storageBuffer16BitAccess. Everything else is optional and reported in
// DeviceCapabilities so kernels can pick variants (subgroup size, f16 math, int8 dot, coopmat).
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "engine/vulkan/kernel_tuning.h"
#include "engine/vulkan/unique_handle.h"

namespace vkllm::vk {

// One supported cooperative-matrix shape (VK_KHR_ or VK_NV_cooperative_matrix), subgroup scope.
struct CoopMatShape {
  uint32_t m = 0, n = 0, k = 0;
  std::string a_type, b_type, c_type, result_type;  // "f16", "f32", "s8", "s32", ...
};

// The workgroup size of the workgroup-scope GEMM (shaders/matmul_cm2.comp): the device probe
// reads VK_NV_cooperative_matrix2's granularity for it, and the GEMM runs with it.
inline constexpr uint32_t kCoopMat2Invocations = 128;

struct DeviceCapabilities {
  std::string name;
  std::string driver;  // driver name + info
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint32_t api_version = 0;

  // Arithmetic and storage (all enabled on the device when reported true).
  bool shader_float16 = false;
  bool shader_int8 = false;
  bool shader_int16 = false;
  bool shader_int64 = false;
  bool storage_16bit = false;  // storageBuffer16BitAccess (required)
  bool storage_8bit = false;   // storageBuffer8BitAccess
  bool timeline_semaphores = false;
  bool buffer_device_address = false;

  // Subgroups (compute stage).
  uint32_t subgroup_size = 1;
  uint32_t min_subgroup_size = 1;
  uint32_t max_subgroup_size = 1;
  VkSubgroupFeatureFlags subgroup_ops = 0;  // VK_SUBGROUP_FEATURE_*; 0 if not in compute stage
  bool subgroup_size_control = false;       // pipelines may request a subgroup size
  bool compute_full_subgroups = false;
  bool subgroup_arithmetic() const { return subgroup_ops & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT; }
  bool subgroup_shuffle() const { return subgroup_ops & VK_SUBGROUP_FEATURE_SHUFFLE_BIT; }
  bool subgroup_vote() const { return subgroup_ops & VK_SUBGROUP_FEATURE_VOTE_BIT; }

  // Fast paths.
  bool push_descriptors = false;      // VK_KHR_push_descriptor
  bool memory_budget = false;         // VK_EXT_memory_budget: Device::memory_budget() is exact
  bool integer_dot_product = false;   // shaderIntegerDotProduct
  bool int8_dot_accelerated = false;  // 4x8-bit packed signed dot is hardware-accelerated
  bool cooperative_matrix = false;    // VK_KHR_cooperative_matrix
  std::vector<CoopMatShape> coopmat_shapes;
  // VK_NV_cooperative_matrix (with shaderFloat16): the GEMM's tensor-core path, compiled from
  // GL_NV_cooperative_matrix. Its subgroup-scope shapes, A/B/C/D component types.
  bool nv_cooperative_matrix = false;
  std::vector<CoopMatShape> nv_coopmat_shapes;
  bool nv_cooperative_matrix2 = false;  // VK_NV_cooperative_matrix2 offered
  // VK_NV_cooperative_matrix2's workgroup-scope matrices with tensor-addressed loads, for the
  // prefill GEMM (shaders/matmul_cm2.comp): f16 x f16 + f32 -> f32 on workgroups of
  // kCoopMat2Invocations in sizes that are multiples of the granularity below (0 where not
  // offered). Enabled with it.
  uint32_t coopmat2_granularity_m = 0, coopmat2_granularity_n = 0, coopmat2_granularity_k = 0;
  bool coopmat2_gemm() const { return coopmat2_granularity_m != 0; }
  // The one shape the tensor-core kernels (GEMM, prefill attention) use: 16x16x16,
  // f16 x f16 + f32 -> f32, subgroup scope, through VK_NV_cooperative_matrix.
  bool nv_f16_mma_16() const;
  // VK_KHR_pipeline_executable_properties, enabled only with --tune pipeline_stats=1: each new
  // pipeline prints the driver's statistics (registers, shared memory, ...) to stderr.
  bool pipeline_stats = false;

  // Limits.
  uint32_t max_shared_memory = 0;  // maxComputeSharedMemorySize, bytes
  uint32_t max_workgroup_invocations = 0;
  std::array<uint32_t, 3> max_workgroup_size{};
  std::array<uint32_t, 3> max_workgroup_count{};
  uint32_t max_push_constants = 0;
  VkDeviceSize max_storage_buffer_range = 0;
  VkDeviceSize storage_buffer_alignment = 1;  // minStorageBufferOffsetAlignment
  VkDeviceSize max_allocation_size = 0;       // maxMemoryAllocationSize
  VkDeviceSize max_buffer_size = 0;           // maxBufferSize (maintenance4) or allocation size
  VkDeviceSize device_local_bytes = 0;        // size of the largest device-local heap
  uint32_t compute_units = 0;  // SMs (VK_NV_shader_sm_builtins); 0 when the device does not say
  bool timestamps = false;
  float timestamp_period_ns = 1.0f;

  bool is_cpu() const { return type == VK_PHYSICAL_DEVICE_TYPE_CPU; }
  // Multi-line human-readable summary (what Device logs once at creation).
  std::string summary() const;
};

// What VKLLM_DEVICE asks for: "" or "auto" (the caller's policy decides), "cpu" (the CPU
// backend), "vulkan" (Vulkan, the best device, lavapipe included), "vulkan:<index or name>", or
// a bare index or name (Vulkan, that device), or a comma-separated list of them ("0,1",
// "vulkan:0,1": models split by layers across those devices). Case-insensitive, surrounding
// spaces ignored.
struct DeviceRequest {
  enum class Kind { Auto, Cpu, Vulkan };
  Kind kind = Kind::Auto;
  std::string selector;  // Vulkan: index or name substring; empty = the best device
  // A list: every device's selector in order (the first is `selector` too); else empty.
  std::vector<std::string> split;
  // Throws std::invalid_argument for "vulkan:" with nothing after it.
  static DeviceRequest parse(std::string_view text);
  std::string str() const;  // "auto", "cpu", "vulkan", "vulkan:1"
};

struct DeviceOptions {
  std::string selector;          // index or name substring; empty = automatic
  bool log_summary = true;       // print DeviceCapabilities::summary() to stderr (once per process)
  bool validation = false;       // enable VK_LAYER_KHRONOS_validation if installed
  bool push_descriptors = true;  // false: use descriptor pools even where push descriptors exist
  // Caps the storage-buffer range the engine assumes (0: the device's maxStorageBufferRange), so
  // the split paths for tensors larger than one binding can be exercised on any device.
  uint64_t max_binding_range = 0;
  KernelTuning tuning;  // what the kernels recorded on this device take from measurements
};

// Names of the physical devices visible through the loader, in enumeration order (for
// `VKLLM_DEVICE=<index>` and diagnostics). Creates and destroys its own instance.
std::vector<std::string> list_physical_devices();

// One physical device as the loader reports it, before any device is created.
struct PhysicalDeviceInfo {
  uint32_t index = 0;  // enumeration order, as VKLLM_DEVICE=vulkan:<index> names it
  std::string name;
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  bool usable = false;  // Vulkan 1.2 and a compute queue
  // Devices in its Vulkan device group (vkEnumeratePhysicalDeviceGroups): more than 1 where the
  // driver links GPUs so that one logical device spans them (peer memory: a split model's
  // devices could then share buffers instead of going through host memory).
  uint32_t group_size = 1;
  bool is_gpu() const {
    return type == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ||
           type == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ||
           type == VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU;
  }
};

// Every physical device the loader sees; empty (with the reason in *error) when Vulkan cannot
// start at all: no driver, or a loader older than 1.2.
std::vector<PhysicalDeviceInfo> probe_physical_devices(std::string* error = nullptr) noexcept;

// "discrete GPU", "integrated GPU", "virtual GPU", "CPU", "other".
const char* physical_device_type_name(VkPhysicalDeviceType type);

class Device {
 public:
  explicit Device(const DeviceOptions& options = {});
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  VkInstance instance() const { return instance_.get(); }
  VkPhysicalDevice physical() const { return physical_; }
  VkDevice handle() const { return device_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return queue_family_; }
  const DeviceCapabilities& caps() const { return caps_; }
  const KernelTuning& tuning() const { return tuning_; }

  // Memory type index with all `required` flags (and as many `preferred` as possible) among
  // `type_bits`; throws if none fits.
  uint32_t memory_type(uint32_t type_bits, VkMemoryPropertyFlags required,
                       VkMemoryPropertyFlags preferred) const;
  VkMemoryPropertyFlags memory_flags(uint32_t memory_type) const;

  // vkQueueSubmit under the device's queue lock (queues are externally synchronised).
  void submit(const VkSubmitInfo& info, VkFence fence);
  // Records `record` into a throwaway command buffer, submits it and waits (slow path: tests,
  // one-off copies). Not for per-step work.
  void run_once(const std::function<void(VkCommandBuffer)>& record);
  void wait_idle();

  // The largest device-local heap's budget for this process and what the process (every
  // allocation of every device in it) uses of it now. With VK_EXT_memory_budget the driver
  // says both; without, budget is the heap size and usage 0.
  struct MemoryBudget {
    uint64_t budget = 0;
    uint64_t usage = 0;
  };
  MemoryBudget memory_budget() const;

  PFN_vkCmdPushDescriptorSetKHR cmd_push_descriptor_set() const { return push_descriptor_fn_; }

 private:
  UniqueHandle<VkInstance> instance_;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  DeviceCapabilities caps_;
  KernelTuning tuning_;
  VkPhysicalDeviceMemoryProperties memory_{};
  PFN_vkCmdPushDescriptorSetKHR push_descriptor_fn_ = nullptr;
  std::mutex queue_mutex_;
  VkCommandPool once_pool_ = VK_NULL_HANDLE;
  VkFence once_fence_ = VK_NULL_HANDLE;
  std::mutex once_mutex_;
};

}  // namespace vkllm::vk
