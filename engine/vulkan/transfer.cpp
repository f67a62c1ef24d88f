#include "engine/vulkan/transfer.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "engine/vulkan/device.h"
#include "engine/vulkan/vk_error.h"

namespace vkllm::vk {

void upload(Device& device, BufferSlice dst, std::span<const std::byte> data) {
  if (data.size() > dst.size)
    throw std::length_error("upload of " + std::to_string(data.size()) + " bytes into a slice of " +
                            std::to_string(dst.size));
  if (data.empty()) return;
  if (dst.mapped) {
    std::memcpy(dst.mapped, data.data(), data.size());
    return;
  }
  Buffer staging(device, data.size(), MemoryKind::Upload, "upload staging");
  std::memcpy(staging.mapped(), data.data(), data.size());
  device.run_once([&](VkCommandBuffer cb) {
    VkBufferCopy region{0, dst.offset, data.size()};
    vkCmdCopyBuffer(cb, staging.handle(), dst.buffer, 1, &region);
  });
}

void download(Device& device, BufferSlice src, std::span<std::byte> out) {
  if (out.size() > src.size)
    throw std::length_error("download of " + std::to_string(out.size()) +
                            " bytes from a slice of " + std::to_string(src.size));
  if (out.empty()) return;
  if (src.mapped) {
    std::memcpy(out.data(), src.mapped, out.size());
    return;
  }
  Buffer readback(device, out.size(), MemoryKind::Readback, "download readback");
  device.run_once([&](VkCommandBuffer cb) {
    VkBufferCopy region{src.offset, 0, out.size()};
    vkCmdCopyBuffer(cb, src.buffer, readback.handle(), 1, &region);
  });
  std::memcpy(out.data(), readback.mapped(), out.size());
}

StagingUploader::StagingUploader(Device& device, VkDeviceSize segment_bytes, uint32_t segments,
                                 bool allow_direct)
    : device_(device), allow_direct_(allow_direct) {
  if (segment_bytes == 0 || segments == 0)
    throw std::invalid_argument("StagingUploader needs at least one non-empty segment");
  VkDevice d = device.handle();
  try {
    auto pool_info = make<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
    pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool_info.queueFamilyIndex = device.queue_family();
    check(vkCreateCommandPool(d, &pool_info, nullptr, &pool_), "vkCreateCommandPool");
    for (uint32_t i = 0; i < segments; ++i) {
      Segment s;
      s.staging = Buffer(device, segment_bytes, MemoryKind::Upload, "staging segment");
      auto alloc =
          make<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
      alloc.commandPool = pool_;
      alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
      alloc.commandBufferCount = 1;
      check(vkAllocateCommandBuffers(d, &alloc, &s.cmd), "vkAllocateCommandBuffers");
      auto fence_info = make<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
      segments_.push_back(std::move(s));
      check(vkCreateFence(d, &fence_info, nullptr, &segments_.back().fence), "vkCreateFence");
    }
  } catch (...) {
    destroy();
    throw;
  }
}

StagingUploader::~StagingUploader() {
  destroy();
}

void StagingUploader::destroy() {
  VkDevice d = device_.handle();
  for (Segment& s : segments_) {
    if (s.in_flight) vkWaitForFences(d, 1, &s.fence, VK_TRUE, UINT64_MAX);
    if (s.fence) vkDestroyFence(d, s.fence, nullptr);
  }
  segments_.clear();
  if (pool_) vkDestroyCommandPool(d, pool_, nullptr);
  pool_ = VK_NULL_HANDLE;
}

void StagingUploader::begin(BufferSlice dst) {
  if (streaming_) throw std::logic_error("StagingUploader::begin while a stream is open");
  dst_ = dst;
  written_ = 0;
  streaming_ = true;
}

void StagingUploader::write(std::span<const std::byte> chunk) {
  if (!streaming_) throw std::logic_error("StagingUploader::write without begin()");
  if (chunk.size() > dst_.size - written_)
    throw std::length_error(
        "upload stream overflows its destination: " + std::to_string(written_ + chunk.size()) +
        " bytes for a slice of " + std::to_string(dst_.size));
  total_bytes_ += chunk.size();
  if (allow_direct_ && dst_.mapped) {
    std::memcpy(dst_.mapped + written_, chunk.data(), chunk.size());
    written_ += chunk.size();
    return;
  }
  while (!chunk.empty()) {
    Segment& s = segments_[current_];
    if (s.in_flight) wait(s);
    VkDeviceSize room = s.staging.size() - s.used;
    if (room == 0) {
      submit_current();
      continue;
    }
    VkDeviceSize n = std::min<VkDeviceSize>(room, chunk.size());
    std::memcpy(s.staging.mapped() + s.used, chunk.data(), n);
    Region* last = s.regions.empty() ? nullptr : &s.regions.back();
    VkDeviceSize dst_offset = dst_.offset + written_;
    if (last && last->dst == dst_.buffer && last->copy.srcOffset + last->copy.size == s.used &&
        last->copy.dstOffset + last->copy.size == dst_offset) {
      last->copy.size += n;
    } else {
      s.regions.push_back({dst_.buffer, VkBufferCopy{s.used, dst_offset, n}});
    }
    s.used += n;
    written_ += n;
    chunk = chunk.subspan(n);
  }
}

void StagingUploader::end() {
  if (!streaming_) throw std::logic_error("StagingUploader::end without begin()");
  streaming_ = false;
  if (written_ != dst_.size)
    throw std::length_error("upload stream ended after " + std::to_string(written_) + " of " +
                            std::to_string(dst_.size) + " bytes");
}

void StagingUploader::submit_current() {
  Segment& s = segments_[current_];
  if (!s.regions.empty()) {
    check(vkResetCommandBuffer(s.cmd, 0), "vkResetCommandBuffer");
    auto info = make<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    info.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(vkBeginCommandBuffer(s.cmd, &info), "vkBeginCommandBuffer");
    for (const Region& r : s.regions) vkCmdCopyBuffer(s.cmd, s.staging.handle(), r.dst, 1, &r.copy);
    // Later submissions on this queue (the compute steps) see the uploaded bytes.
    auto b = make<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
    b.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT;
    vkCmdPipelineBarrier(s.cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                         1, &b, 0, nullptr, 0, nullptr);
    check(vkEndCommandBuffer(s.cmd), "vkEndCommandBuffer");
    check(vkResetFences(device_.handle(), 1, &s.fence), "vkResetFences");
    auto submit = make<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &s.cmd;
    device_.submit(submit, s.fence);
    s.in_flight = true;
  }
  current_ = (current_ + 1) % segments_.size();
}

void StagingUploader::wait(Segment& s) {
  check(vkWaitForFences(device_.handle(), 1, &s.fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  s.in_flight = false;
  s.used = 0;
  s.regions.clear();
}

void StagingUploader::flush() {
  if (segments_[current_].used > 0) submit_current();
  for (Segment& s : segments_)
    if (s.in_flight) wait(s);
}

}  // namespace vkllm::vk
