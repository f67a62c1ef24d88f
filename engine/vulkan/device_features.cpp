#include "engine/vulkan/device_features.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/vulkan/vk_error.h"

namespace vkllm::vk {
namespace {

// VK_KHR_cooperative_matrix postdates the system headers (1.3.239); its structures are declared
// here from the registry so the capability can still be detected and logged.
constexpr const char* kCoopMatExtension = "VK_KHR_cooperative_matrix";
constexpr auto kCoopMatFeaturesType = static_cast<VkStructureType>(1000506000);
constexpr auto kCoopMatPropertiesType = static_cast<VkStructureType>(1000506001);
struct CoopMatFeaturesKHR {
  VkStructureType sType;
  void* pNext;
  VkBool32 cooperativeMatrix;
  VkBool32 cooperativeMatrixRobustBufferAccess;
};
struct CoopMatPropertiesKHR {
  VkStructureType sType;
  void* pNext;
  uint32_t MSize, NSize, KSize;
  uint32_t AType, BType, CType, ResultType;  // VkComponentTypeKHR
  VkBool32 saturatingAccumulation;
  uint32_t scope;  // VkScopeKHR; 3 = subgroup
};
using PFN_GetCoopMatProperties = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*,
                                                      CoopMatPropertiesKHR*);

// VK_NV_cooperative_matrix2 (also newer than the headers): workgroup-scope matrices of flexible
// sizes and tensor-addressed loads, what matmul_cm2.comp needs.
constexpr const char* kCoopMat2Extension = "VK_NV_cooperative_matrix2";
constexpr auto kCoopMat2FeaturesType = static_cast<VkStructureType>(1000593000);
constexpr auto kCoopMatFlexibleType = static_cast<VkStructureType>(1000593001);
struct CoopMat2FeaturesNV {
  VkStructureType sType;
  void* pNext;
  VkBool32 workgroupScope, flexibleDimensions, reductions, conversions, perElementOperations,
      tensorAddressing, blockLoads;
};
struct CoopMatFlexibleDimensionsNV {
  VkStructureType sType;
  void* pNext;
  uint32_t MGranularity, NGranularity, KGranularity;
  uint32_t AType, BType, CType, ResultType;  // VkComponentTypeKHR: 0 f16, 1 f32
  VkBool32 saturatingAccumulation;
  uint32_t scope;  // VkScopeKHR; 2 = workgroup
  uint32_t workgroupInvocations;
};
using PFN_GetCoopMatFlexibleDimensions = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*,
                                                              CoopMatFlexibleDimensionsNV*);

std::string component_name(uint32_t t) {
  static const char* names[] = {"f16", "f32", "f64", "s8",  "s16", "s32",
                                "s64", "u8",  "u16", "u32", "u64"};
  return t < std::size(names) ? names[t] : "type" + std::to_string(t);
}

std::vector<VkExtensionProperties> device_extensions(VkPhysicalDevice pd) {
  uint32_t n = 0;
  check(vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr),
        "vkEnumerateDeviceExtensionProperties");
  std::vector<VkExtensionProperties> ext(n);
  check(vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, ext.data()),
        "vkEnumerateDeviceExtensionProperties");
  return ext;
}

// Chains f2 -> 1.1 -> 1.2 -> (1.3, or the pre-1.3 extensions the device has); returns the
// chain's open end.
void** link_core(CoreFeatures& f, bool v13, bool size_ext, bool dot_ext) {
  f.f2.pNext = &f.v11;
  f.v11.pNext = &f.v12;
  void** tail = &f.v12.pNext;
  if (v13) {
    *tail = &f.v13;
    tail = &f.v13.pNext;
  } else {
    if (size_ext) {
      *tail = &f.size;
      tail = &f.size.pNext;
    }
    if (dot_ext) {
      *tail = &f.dot;
      tail = &f.dot.pNext;
    }
  }
  return tail;
}

}  // namespace

CoreFeatures::CoreFeatures()
    : f2(make<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2)),
      v11(make<VkPhysicalDeviceVulkan11Features>(
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES)),
      v12(make<VkPhysicalDeviceVulkan12Features>(
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES)),
      v13(make<VkPhysicalDeviceVulkan13Features>(
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES)),
      size(make<VkPhysicalDeviceSubgroupSizeControlFeatures>(
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES)),
      dot(make<VkPhysicalDeviceShaderIntegerDotProductFeatures>(
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES)) {}

bool has_extension(const std::vector<VkExtensionProperties>& ext, const char* name) {
  return std::any_of(ext.begin(), ext.end(), [&](const VkExtensionProperties& e) {
    return !std::strcmp(e.extensionName, name);
  });
}

DeviceFeatures probe_device_features(VkInstance instance, VkPhysicalDevice physical,
                                     uint32_t queue_family, const DeviceOptions& options) {
  DeviceFeatures d;
  VkPhysicalDeviceProperties p;
  vkGetPhysicalDeviceProperties(physical, &p);
  const bool v13 = p.apiVersion >= VK_API_VERSION_1_3;
  auto ext = device_extensions(physical);

  CoopMatFeaturesKHR fcoop{kCoopMatFeaturesType, nullptr, VK_FALSE, VK_FALSE};
  const bool has_size_ext = has_extension(ext, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
  const bool has_dot_ext = has_extension(ext, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
  const bool has_coop_ext = has_extension(ext, kCoopMatExtension);
  CoreFeatures& offered = d.offered;
  auto& f2 = offered.f2;
  auto& f11 = offered.v11;
  auto& f12 = offered.v12;
  auto& f13 = offered.v13;
  auto& fsize = offered.size;
  auto& fdot = offered.dot;
  void** tail = link_core(offered, v13, has_size_ext, has_dot_ext);
  if (has_coop_ext) {
    *tail = &fcoop;
    tail = &fcoop.pNext;
  }
  CoopMat2FeaturesNV fcoop2{};
  fcoop2.sType = kCoopMat2FeaturesType;
  const bool has_coop2_ext = has_coop_ext && has_extension(ext, kCoopMat2Extension);
  if (has_coop2_ext) {
    *tail = &fcoop2;
    tail = &fcoop2.pNext;
  }
  // VK_NV_cooperative_matrix: what GL_NV_cooperative_matrix shaders (the tensor-core GEMM) need;
  // the installed glslang compiles that extension but not the KHR one.
  auto fcoop_nv = make<VkPhysicalDeviceCooperativeMatrixFeaturesNV>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV);
  const bool has_coop_nv_ext = has_extension(ext, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  if (has_coop_nv_ext) *tail = &fcoop_nv;
  vkGetPhysicalDeviceFeatures2(physical, &f2);

  auto p11 = make<VkPhysicalDeviceVulkan11Properties>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES);
  auto p12 = make<VkPhysicalDeviceVulkan12Properties>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES);
  auto p13 = make<VkPhysicalDeviceVulkan13Properties>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_PROPERTIES);
  auto psize = make<VkPhysicalDeviceSubgroupSizeControlProperties>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES);
  auto pdot = make<VkPhysicalDeviceShaderIntegerDotProductProperties>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES);
  auto psm = make<VkPhysicalDeviceShaderSMBuiltinsPropertiesNV>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV);
  const bool has_sm = has_extension(ext, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME);
  auto p2 = make<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
  p2.pNext = &p11;
  p11.pNext = has_sm ? static_cast<void*>(&psm) : static_cast<void*>(&p12);
  if (has_sm) psm.pNext = &p12;
  if (v13) {
    p12.pNext = &p13;
  } else {
    void** ptail = &p12.pNext;
    if (has_size_ext) {
      *ptail = &psize;
      ptail = &psize.pNext;
    }
    if (has_dot_ext) *ptail = &pdot;
  }
  vkGetPhysicalDeviceProperties2(physical, &p2);
  vkGetPhysicalDeviceMemoryProperties(physical, &d.memory);

  if (!f11.storageBuffer16BitAccess)
    throw std::runtime_error(std::string("Vulkan device \"") + p.deviceName +
                             "\" lacks storageBuffer16BitAccess, which vkllm requires");

  d.caps.name = p.deviceName;
  d.caps.driver = std::string(p12.driverName) + " " + p12.driverInfo;
  d.caps.vendor_id = p.vendorID;
  d.caps.device_id = p.deviceID;
  d.caps.type = p.deviceType;
  d.caps.api_version = p.apiVersion;
  d.caps.shader_float16 = f12.shaderFloat16;
  d.caps.shader_int8 = f12.shaderInt8;
  d.caps.shader_int16 = f2.features.shaderInt16;
  d.caps.shader_int64 = f2.features.shaderInt64;
  d.caps.storage_16bit = f11.storageBuffer16BitAccess;
  d.caps.storage_8bit = f12.storageBuffer8BitAccess;
  d.caps.timeline_semaphores = f12.timelineSemaphore;
  d.caps.buffer_device_address = f12.bufferDeviceAddress;
  d.caps.subgroup_size = p11.subgroupSize;
  d.caps.subgroup_ops = (p11.subgroupSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT)
                            ? p11.subgroupSupportedOperations
                            : 0;
  if (v13) {
    d.caps.subgroup_size_control =
        f13.subgroupSizeControl && (p13.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT);
    d.caps.compute_full_subgroups = f13.computeFullSubgroups;
    d.caps.min_subgroup_size = p13.minSubgroupSize;
    d.caps.max_subgroup_size = p13.maxSubgroupSize;
    d.caps.integer_dot_product = f13.shaderIntegerDotProduct;
    d.caps.int8_dot_accelerated = p13.integerDotProduct4x8BitPackedSignedAccelerated;
    d.caps.max_buffer_size = p13.maxBufferSize;
  } else {
    d.caps.subgroup_size_control = has_size_ext && fsize.subgroupSizeControl &&
                                   (psize.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT);
    d.caps.compute_full_subgroups = has_size_ext && fsize.computeFullSubgroups;
    d.caps.min_subgroup_size = has_size_ext ? psize.minSubgroupSize : p11.subgroupSize;
    d.caps.max_subgroup_size = has_size_ext ? psize.maxSubgroupSize : p11.subgroupSize;
    d.caps.integer_dot_product = has_dot_ext && fdot.shaderIntegerDotProduct;
    d.caps.int8_dot_accelerated =
        has_dot_ext && pdot.integerDotProduct4x8BitPackedSignedAccelerated;
  }
  d.caps.push_descriptors =
      options.push_descriptors && has_extension(ext, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  d.caps.memory_budget = has_extension(ext, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  d.caps.cooperative_matrix = has_coop_ext && fcoop.cooperativeMatrix;
  d.caps.nv_cooperative_matrix2 = has_extension(ext, "VK_NV_cooperative_matrix2");
  if (options.tuning.pipeline_stats)
    d.caps.pipeline_stats =
        has_extension(ext, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  if (d.caps.cooperative_matrix) {
    auto get = reinterpret_cast<PFN_GetCoopMatProperties>(
        vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
    uint32_t n = 0;
    if (get && get(physical, &n, nullptr) == VK_SUCCESS) {
      std::vector<CoopMatPropertiesKHR> shapes(n,
                                               make<CoopMatPropertiesKHR>(kCoopMatPropertiesType));
      get(physical, &n, shapes.data());
      for (auto& s : shapes)
        if (s.scope == 3)
          d.caps.coopmat_shapes.push_back({s.MSize, s.NSize, s.KSize, component_name(s.AType),
                                           component_name(s.BType), component_name(s.CType),
                                           component_name(s.ResultType)});
    }
  }
  if (d.caps.cooperative_matrix && has_coop2_ext && fcoop2.workgroupScope &&
      fcoop2.flexibleDimensions && fcoop2.tensorAddressing && f12.shaderFloat16 && v13) {
    auto get = reinterpret_cast<PFN_GetCoopMatFlexibleDimensions>(vkGetInstanceProcAddr(
        instance, "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV"));
    uint32_t n = 0;
    if (get && get(physical, &n, nullptr) == VK_SUCCESS) {
      std::vector<CoopMatFlexibleDimensionsNV> sizes(n);
      for (auto& s : sizes) s.sType = kCoopMatFlexibleType;
      get(physical, &n, sizes.data());
      for (const auto& s : sizes)
        if (s.scope == 2 && s.workgroupInvocations == kCoopMat2Invocations && s.AType == 0 &&
            s.BType == 0 && s.CType == 1 && s.ResultType == 1 && !s.saturatingAccumulation) {
          d.caps.coopmat2_granularity_m = s.MGranularity;
          d.caps.coopmat2_granularity_n = s.NGranularity;
          d.caps.coopmat2_granularity_k = s.KGranularity;
          break;
        }
    }
  }
  d.caps.nv_cooperative_matrix = has_coop_nv_ext && fcoop_nv.cooperativeMatrix && f12.shaderFloat16;
  if (d.caps.nv_cooperative_matrix) {
    auto get = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
        vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
    uint32_t n = 0;
    if (get && get(physical, &n, nullptr) == VK_SUCCESS) {
      std::vector<VkCooperativeMatrixPropertiesNV> shapes(
          n, make<VkCooperativeMatrixPropertiesNV>(
                 VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV));
      get(physical, &n, shapes.data());
      for (auto& s : shapes)
        if (s.scope == VK_SCOPE_SUBGROUP_NV)
          d.caps.nv_coopmat_shapes.push_back({s.MSize, s.NSize, s.KSize, component_name(s.AType),
                                              component_name(s.BType), component_name(s.CType),
                                              component_name(s.DType)});
    }
    d.caps.nv_cooperative_matrix = !d.caps.nv_coopmat_shapes.empty();
  }
  const VkPhysicalDeviceLimits& lim = p.limits;
  d.caps.max_shared_memory = lim.maxComputeSharedMemorySize;
  d.caps.max_workgroup_invocations = lim.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) {
    d.caps.max_workgroup_size[i] = lim.maxComputeWorkGroupSize[i];
    d.caps.max_workgroup_count[i] = lim.maxComputeWorkGroupCount[i];
  }
  d.caps.max_push_constants = lim.maxPushConstantsSize;
  d.caps.compute_units = has_sm ? psm.shaderSMCount : 0;
  d.caps.max_storage_buffer_range = lim.maxStorageBufferRange;
  if (options.max_binding_range)
    d.caps.max_storage_buffer_range =
        std::min<VkDeviceSize>(d.caps.max_storage_buffer_range, options.max_binding_range);
  d.caps.storage_buffer_alignment = lim.minStorageBufferOffsetAlignment;
  d.caps.max_allocation_size = p11.maxMemoryAllocationSize;
  if (d.caps.max_buffer_size == 0) d.caps.max_buffer_size = d.caps.max_allocation_size;
  for (uint32_t i = 0; i < d.memory.memoryHeapCount; ++i)
    if (d.memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      d.caps.device_local_bytes = std::max(d.caps.device_local_bytes, d.memory.memoryHeaps[i].size);
  {
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, nullptr);
    std::vector<VkQueueFamilyProperties> families(n);
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, families.data());
    d.caps.timestamps = families[queue_family].timestampValidBits > 0;
    d.caps.timestamp_period_ns = lim.timestampPeriod;
  }

  d.vulkan13 = v13;
  d.subgroup_size_ext = has_size_ext;
  d.integer_dot_ext = has_dot_ext;
  for (VkBaseOutStructure* s :
       {reinterpret_cast<VkBaseOutStructure*>(&f2), reinterpret_cast<VkBaseOutStructure*>(&f11),
        reinterpret_cast<VkBaseOutStructure*>(&f12), reinterpret_cast<VkBaseOutStructure*>(&f13),
        reinterpret_cast<VkBaseOutStructure*>(&fsize),
        reinterpret_cast<VkBaseOutStructure*>(&fdot)})
    s->pNext = nullptr;
  return d;
}

void with_enabled_features(
    const DeviceFeatures& d,
    const std::function<void(void* chain, const std::vector<const char*>& extensions)>& create) {
  const CoreFeatures& f = d.offered;
  const auto& f2 = f.f2;
  const auto& f11 = f.v11;
  const auto& f12 = f.v12;
  const auto& f13 = f.v13;
  const auto& fsize = f.size;
  const auto& fdot = f.dot;
  const bool v13 = d.vulkan13;
  const bool has_size_ext = d.subgroup_size_ext;
  const bool has_dot_ext = d.integer_dot_ext;
  CoreFeatures enabled;
  auto& e2 = enabled.f2;
  auto& e11 = enabled.v11;
  auto& e12 = enabled.v12;
  auto& e13 = enabled.v13;
  auto& esize = enabled.size;
  auto& edot = enabled.dot;
  CoopMatFeaturesKHR ecoop{kCoopMatFeaturesType, nullptr, VK_TRUE, VK_FALSE};
  e2.features.shaderInt16 = f2.features.shaderInt16;
  e2.features.shaderInt64 = f2.features.shaderInt64;
  e11.storageBuffer16BitAccess = VK_TRUE;
  e11.uniformAndStorageBuffer16BitAccess = f11.uniformAndStorageBuffer16BitAccess;
  e11.storagePushConstant16 = f11.storagePushConstant16;
  e12.shaderFloat16 = f12.shaderFloat16;
  e12.shaderInt8 = f12.shaderInt8;
  e12.storageBuffer8BitAccess = f12.storageBuffer8BitAccess;
  e12.uniformAndStorageBuffer8BitAccess = f12.uniformAndStorageBuffer8BitAccess;
  e12.storagePushConstant8 = f12.storagePushConstant8;
  e12.timelineSemaphore = f12.timelineSemaphore;
  e12.shaderSubgroupExtendedTypes = f12.shaderSubgroupExtendedTypes;
  e12.vulkanMemoryModel = f12.vulkanMemoryModel;
  e12.vulkanMemoryModelDeviceScope = f12.vulkanMemoryModelDeviceScope;
  std::vector<const char*> extensions;
  if (v13) {
    e13.subgroupSizeControl = f13.subgroupSizeControl;
    e13.computeFullSubgroups = f13.computeFullSubgroups;
    e13.shaderIntegerDotProduct = f13.shaderIntegerDotProduct;
    e13.maintenance4 = f13.maintenance4;
    e13.synchronization2 = f13.synchronization2;
  } else {
    if (has_size_ext) {
      esize.subgroupSizeControl = fsize.subgroupSizeControl;
      esize.computeFullSubgroups = fsize.computeFullSubgroups;
      extensions.push_back(VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
    }
    if (has_dot_ext) {
      edot.shaderIntegerDotProduct = fdot.shaderIntegerDotProduct;
      extensions.push_back(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
    }
  }
  void** tail = link_core(enabled, v13, has_size_ext, has_dot_ext);
  // An extension to enable and its feature struct, appended to the creation chain.
  auto enable = [&](const char* extension, auto& features) {
    extensions.push_back(extension);
    *tail = &features;
    tail = &features.pNext;
  };
  if (d.caps.cooperative_matrix) enable(kCoopMatExtension, ecoop);
  CoopMat2FeaturesNV ecoop2{};
  ecoop2.sType = kCoopMat2FeaturesType;
  ecoop2.workgroupScope = ecoop2.flexibleDimensions = ecoop2.tensorAddressing = VK_TRUE;
  if (d.caps.coopmat2_gemm()) enable(kCoopMat2Extension, ecoop2);
  auto ecoop_nv = make<VkPhysicalDeviceCooperativeMatrixFeaturesNV>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV);
  ecoop_nv.cooperativeMatrix = VK_TRUE;
  if (d.caps.nv_cooperative_matrix) enable(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME, ecoop_nv);
  auto estats = make<VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR);
  estats.pipelineExecutableInfo = VK_TRUE;
  if (d.caps.pipeline_stats) enable(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME, estats);
  if (d.caps.push_descriptors) extensions.push_back(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  if (d.caps.memory_budget) extensions.push_back(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  create(&e2, extensions);
}

}  // namespace vkllm::vk
