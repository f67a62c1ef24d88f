#include "engine/vulkan/arena.h"

#include <algorithm>
#include <stdexcept>

#include "engine/vulkan/device.h"

namespace vkllm::vk {

Arena::Arena(Device& device, std::string name, VkDeviceSize capacity, MemoryKind kind,
             VkDeviceSize block_size)
    : name_(std::move(name)), capacity_(capacity) {
  if (capacity == 0) throw std::invalid_argument("arena " + name_ + ": capacity must be positive");
  const auto& caps = device.caps();
  alignment_ = std::max<VkDeviceSize>(caps.storage_buffer_alignment, 16);
  VkDeviceSize limit =
      std::min({VkDeviceSize(1) << 30, caps.max_allocation_size, caps.max_buffer_size});
  block_size_ = block_size ? std::min(block_size, limit) : std::min(capacity, limit);
  block_size_ = std::max<VkDeviceSize>(block_size_ / alignment_ * alignment_, alignment_);
  for (VkDeviceSize left = capacity; left > 0;) {
    VkDeviceSize n = std::min(left, block_size_);
    blocks_.emplace_back(device, n, kind,
                         "arena " + name_ + " block " + std::to_string(blocks_.size()));
    left -= n;
  }
}

BufferSlice Arena::allocate(VkDeviceSize size, VkDeviceSize alignment) {
  if (size == 0) throw std::invalid_argument("arena " + name_ + ": allocation of 0 bytes");
  if (alignment == 0) alignment = alignment_;
  if (size > block_size_)
    throw std::invalid_argument("arena " + name_ + ": allocation of " + std::to_string(size) +
                                " bytes exceeds its block size " + std::to_string(block_size_));
  for (size_t b = block_; b < blocks_.size(); ++b) {
    VkDeviceSize start = b == block_ ? (offset_ + alignment - 1) / alignment * alignment : 0;
    if (start + size <= blocks_[b].size()) {
      block_ = b;
      offset_ = start + size;
      return blocks_[b].slice(start, size);
    }
  }
  throw std::length_error("arena " + name_ + " is full: " + std::to_string(size) +
                          " bytes requested, " + std::to_string(capacity_ - used()) + " of " +
                          std::to_string(capacity_) + " bytes left");
}

void Arena::reset(Mark mark) {
  if (mark.block > block_ || (mark.block == block_ && mark.offset > offset_))
    throw std::invalid_argument("arena " + name_ +
                                ": reset to a mark ahead of the current position");
  block_ = mark.block;
  offset_ = mark.offset;
}

VkDeviceSize Arena::used() const {
  VkDeviceSize total = offset_;
  for (size_t b = 0; b < block_; ++b) total += blocks_[b].size();
  return total;
}

}  // namespace vkllm::vk
