// Moving bytes between host and device.
//
//  - upload()/download(): blocking one-off copies (tests, small step inputs, results). They memcpy
//    directly when the slice is host-mapped (UMA, lavapipe), else go through a temporary buffer.
//  - StagingUploader: streaming uploads for model loading. Bytes arrive in chunks of any size
//    (e.g. decompressed zstd frames) and go through a ring of host-visible segments; a full segment
//    is copied on the GPU while the next one fills, so loading never holds a whole tensor in host
//    memory twice.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <span>
#include <vector>

#include "engine/vulkan/buffer.h"

namespace vkllm::vk {

class Device;

// Blocking; the device must not be writing/reading the slice concurrently.
void upload(Device& device, BufferSlice dst, std::span<const std::byte> data);
void download(Device& device, BufferSlice src, std::span<std::byte> out);

template <typename T>
void upload(Device& device, BufferSlice dst, std::span<const T> data) {
  upload(device, dst, std::as_bytes(data));
}
template <typename T>
std::vector<T> download(Device& device, BufferSlice src, size_t count) {
  std::vector<T> out(count);
  download(device, src, std::as_writable_bytes(std::span<T>(out)));
  return out;
}

class StagingUploader {
 public:
  // `segments` host-visible buffers of `segment_bytes` each. With `allow_direct`, host-mapped
  // destinations are written with memcpy instead of a GPU copy.
  explicit StagingUploader(Device& device, VkDeviceSize segment_bytes = 16u << 20,
                           uint32_t segments = 3, bool allow_direct = true);
  ~StagingUploader();
  StagingUploader(const StagingUploader&) = delete;
  StagingUploader& operator=(const StagingUploader&) = delete;

  // Starts a stream of exactly dst.size bytes into dst (the previous stream must be complete).
  void begin(BufferSlice dst);
  // Appends bytes to the current stream; throws std::length_error past dst.size.
  void write(std::span<const std::byte> chunk);
  // Ends the stream; throws std::length_error if fewer than dst.size bytes were written. The copy
  // may still be pending until flush().
  void end();
  void upload(BufferSlice dst, std::span<const std::byte> data) {
    begin(dst);
    write(data);
    end();
  }
  // Submits everything pending and waits until all copies are done (and visible to later
  // submissions on the device queue).
  void flush();

  VkDeviceSize bytes_uploaded() const { return total_bytes_; }

 private:
  struct Region {
    VkBuffer dst;
    VkBufferCopy copy;
  };
  struct Segment {
    Buffer staging;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    bool in_flight = false;
    VkDeviceSize used = 0;
    std::vector<Region> regions;
  };
  void submit_current();
  void wait(Segment& s);
  void destroy();

  Device& device_;
  bool allow_direct_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  std::vector<Segment> segments_;
  size_t current_ = 0;
  BufferSlice dst_{};
  VkDeviceSize written_ = 0;
  bool streaming_ = false;
  VkDeviceSize total_bytes_ = 0;
};

}  // namespace vkllm::vk
