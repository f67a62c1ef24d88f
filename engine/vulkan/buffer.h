// Device memory as the kernels see it: BufferSlice (a bindable byte range) and Buffer (an owned
// VkBuffer with its own VkDeviceMemory). Per-tensor buffers come from an Arena (arena.h), not
// from here; Buffer is for arenas' blocks, staging and tests.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <span>
#include <string>

namespace vkllm::vk {

class Device;

enum class MemoryKind {
  DeviceLocal,  // fastest for the GPU; mapped too when the device-local type is host-visible (UMA)
  Upload,       // host-visible + coherent, mapped, preferably write-combined/device-local (staging)
  Readback,     // host-visible + coherent, mapped, preferably host-cached (downloads)
};

// A byte range of a VkBuffer: what a dispatch binds and a copy reads or writes. `mapped` points
// at byte `offset` when the memory is host-visible and coherent (else nullptr). Cheap to copy; it
// does not own anything.
struct BufferSlice {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
  VkDeviceSize size = 0;
  std::byte* mapped = nullptr;

  // Sub-range [offset, offset + size) of this slice; throws std::out_of_range if it is outside.
  BufferSlice sub(VkDeviceSize offset, VkDeviceSize size) const;
  explicit operator bool() const { return buffer != VK_NULL_HANDLE; }
};

class Buffer {
 public:
  Buffer() = default;
  // Throws VulkanError (e.g. VK_ERROR_OUT_OF_DEVICE_MEMORY) naming `name` and the size on failure.
  Buffer(Device& device, VkDeviceSize size, MemoryKind kind, const std::string& name = "buffer");
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  VkBuffer handle() const { return buffer_; }
  VkDeviceSize size() const { return size_; }
  std::byte* mapped() const { return mapped_; }  // nullptr unless host-visible and coherent
  BufferSlice slice() const { return {buffer_, 0, size_, mapped_}; }
  BufferSlice slice(VkDeviceSize offset, VkDeviceSize size) const {
    return slice().sub(offset, size);
  }

 private:
  void release();
  VkDevice device_ = VK_NULL_HANDLE;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  VkDeviceSize size_ = 0;
  std::byte* mapped_ = nullptr;
};

}  // namespace vkllm::vk
