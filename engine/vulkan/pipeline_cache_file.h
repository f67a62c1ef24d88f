// vkllm's on-disk VkPipelineCache: one file per (device, driver, embedded SPIR-V), so a restart,
// or a machine whose driver keeps no shader cache of its own, creates pipelines from it instead
// of compiling them again.
//
// The file is a small vkllm header (magic, format version, the key below, payload size and a
// checksum of the payload) followed by vkGetPipelineCacheData's bytes. A file is used only when
// every field checks out and the payload's own Vulkan header (length, version, vendorID,
// deviceID, pipelineCacheUUID) names this device; anything else (truncated, corrupted, another
// device or driver, other shaders) is ignored, never handed to the driver. Files are written to
// a temp name, fsync'd and renamed, so a reader never sees half of one.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace vkllm::vk {

// What a cache file must have been made for.
struct PipelineCacheKey {
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  uint32_t driver_version = 0;
  std::array<uint8_t, 16> cache_uuid{};  // VkPhysicalDeviceProperties::pipelineCacheUUID
  uint64_t spirv_hash = 0;               // of every embedded SPIR-V module (names and bytes)

  // "pipelines-<vendor>-<device>-<driver>-<uuid>-<spirv>.bin": distinct keys never share a file.
  std::string file_name() const;
};

// FNV-1a 64 of the embedded SPIR-V set (stable across runs and builds of the same shaders).
uint64_t embedded_spirv_hash();

// Header + payload, as written to disk.
std::vector<std::byte> encode_pipeline_cache_file(const PipelineCacheKey& key,
                                                  std::span<const std::byte> vulkan_data);

struct DecodedPipelineCache {
  std::vector<std::byte> vulkan_data;  // empty when rejected
  std::string rejected;                // why the file is not used; empty when accepted
};

// Checks a file's bytes against `key` (see the header comment for what is checked).
DecodedPipelineCache decode_pipeline_cache_file(const PipelineCacheKey& key,
                                                std::span<const std::byte> file);

// Reads and decodes `path`; a missing file is rejected with "absent".
DecodedPipelineCache read_pipeline_cache_file(const PipelineCacheKey& key,
                                              const std::filesystem::path& path);

// Writes atomically (temp file in the same directory, fsync, rename, fsync of the directory),
// creating the directory if needed. Throws std::runtime_error on failure.
void write_pipeline_cache_file(const std::filesystem::path& path, std::span<const std::byte> bytes);

}  // namespace vkllm::vk
