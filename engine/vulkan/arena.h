// Device memory arenas: a few large VkDeviceMemory blocks, sub-allocated by bumping an offset, so
// no tensor or step allocates Vulkan memory of its own. One arena per lifetime class: model
// weights (freed with the model), KV blocks (allocated once), activations/scratch (reset to a
// mark every step).
#pragma once

#include <vulkan/vulkan.h>

#include <string>
#include <vector>

#include "engine/vulkan/buffer.h"

namespace vkllm::vk {

class Device;

class Arena {
 public:
  // Reserves `capacity` bytes up front (so an over-commit fails at creation, naming the arena), in
  // blocks of at most `block_size` bytes (0: min(capacity, 1 GiB, maxMemoryAllocationSize,
  // maxBufferSize)). An allocation never spans two blocks.
  Arena(Device& device, std::string name, VkDeviceSize capacity,
        MemoryKind kind = MemoryKind::DeviceLocal, VkDeviceSize block_size = 0);
  Arena(Arena&&) = default;
  Arena& operator=(Arena&&) = default;

  // `size` bytes at a multiple of `alignment` (0: the device's storage-buffer offset alignment,
  // so the slice can be bound directly). Throws std::length_error naming the arena, the request
  // and the space left when it does not fit, std::invalid_argument for size 0 or a
  // size above the block size.
  BufferSlice allocate(VkDeviceSize size, VkDeviceSize alignment = 0);

  // A position to return to: everything allocated after mark() is released by reset(mark).
  struct Mark {
    size_t block = 0;
    VkDeviceSize offset = 0;
  };
  Mark mark() const { return {block_, offset_}; }
  void reset(Mark mark);
  void reset() { reset(Mark{}); }

  const std::string& name() const { return name_; }
  VkDeviceSize capacity() const { return capacity_; }
  VkDeviceSize block_size() const { return block_size_; }
  VkDeviceSize used() const;  // bytes up to the current position, including alignment padding
  size_t block_count() const { return blocks_.size(); }

 private:
  std::string name_;
  VkDeviceSize capacity_ = 0;
  VkDeviceSize block_size_ = 0;
  VkDeviceSize alignment_ = 1;
  std::vector<Buffer> blocks_;
  size_t block_ = 0;
  VkDeviceSize offset_ = 0;
};

}  // namespace vkllm::vk
