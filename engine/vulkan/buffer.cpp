#include "engine/vulkan/buffer.h"

#include <stdexcept>
#include <utility>

#include "engine/vulkan/device.h"
#include "engine/vulkan/vk_error.h"

namespace vkllm::vk {

BufferSlice BufferSlice::sub(VkDeviceSize off, VkDeviceSize len) const {
  if (off > size || len > size - off)
    throw std::out_of_range("buffer slice [" + std::to_string(off) + ", +" + std::to_string(len) +
                            ") is outside a slice of " + std::to_string(size) + " bytes");
  return {buffer, offset + off, len, mapped ? mapped + off : nullptr};
}

Buffer::Buffer(Device& device, VkDeviceSize size, MemoryKind kind, const std::string& name)
    : device_(device.handle()), size_(size) {
  if (size == 0) throw std::invalid_argument(name + ": buffer size must be positive");
  auto info = make<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  info.size = size;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkResult r = vkCreateBuffer(device_, &info, nullptr, &buffer_);
  if (r != VK_SUCCESS)
    throw VulkanError(
        "vkCreateBuffer(" + name + ", " + std::to_string(size) + " bytes): " + result_name(r), r);
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_, buffer_, &req);
  VkMemoryPropertyFlags required = 0, preferred = 0;
  switch (kind) {
    case MemoryKind::DeviceLocal:
      preferred = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
      break;
    case MemoryKind::Upload:
      required = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
      break;
    case MemoryKind::Readback:
      required = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
      preferred = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
      break;
  }
  uint32_t type = 0;
  try {
    type = device.memory_type(req.memoryTypeBits, required, preferred);
  } catch (...) {
    release();
    throw;
  }
  auto alloc = make<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = type;
  r = vkAllocateMemory(device_, &alloc, nullptr, &memory_);
  if (r != VK_SUCCESS) {
    release();
    throw VulkanError(
        "vkAllocateMemory(" + name + ", " + std::to_string(req.size) + " bytes): " + result_name(r),
        r);
  }
  r = vkBindBufferMemory(device_, buffer_, memory_, 0);
  const VkMemoryPropertyFlags host =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  if (r == VK_SUCCESS && (device.memory_flags(type) & host) == host) {
    void* p = nullptr;
    r = vkMapMemory(device_, memory_, 0, VK_WHOLE_SIZE, 0, &p);
    mapped_ = static_cast<std::byte*>(p);
  }
  if (r != VK_SUCCESS) {
    release();
    throw VulkanError("binding/mapping " + name + ": " + result_name(r), r);
  }
}

Buffer::Buffer(Buffer&& o) noexcept
    : device_(o.device_),
      buffer_(std::exchange(o.buffer_, VK_NULL_HANDLE)),
      memory_(std::exchange(o.memory_, VK_NULL_HANDLE)),
      size_(std::exchange(o.size_, 0)),
      mapped_(std::exchange(o.mapped_, nullptr)) {}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release();
    device_ = o.device_;
    buffer_ = std::exchange(o.buffer_, VK_NULL_HANDLE);
    memory_ = std::exchange(o.memory_, VK_NULL_HANDLE);
    size_ = std::exchange(o.size_, 0);
    mapped_ = std::exchange(o.mapped_, nullptr);
  }
  return *this;
}

Buffer::~Buffer() {
  release();
}

void Buffer::release() {
  if (buffer_) vkDestroyBuffer(device_, buffer_, nullptr);
  if (memory_) vkFreeMemory(device_, memory_, nullptr);  // implicitly unmaps
  buffer_ = VK_NULL_HANDLE;
  memory_ = VK_NULL_HANDLE;
  mapped_ = nullptr;
}

}  // namespace vkllm::vk
