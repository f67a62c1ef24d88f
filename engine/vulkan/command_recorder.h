// Records compute work into one command buffer and submits it: bind pipeline + buffers + push
// constants + dispatch, compute->compute barriers, copies, timestamps, submit + fence wait.
//
// Descriptors: with VK_KHR_push_descriptor (NVIDIA, AMD, Intel, lavapipe) buffers are pushed
// straight into the command buffer; otherwise descriptor sets are allocated from pools owned by the
// recorder and recycled at the next begin(). Barriers are explicit: the recorder never adds one
// between dispatches on its own, so independent dispatches run back to back.
#pragma once

#include <vulkan/vulkan.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "engine/vulkan/buffer.h"

namespace vkllm::vk {

class Device;
class Pipeline;

struct Groups {
  uint32_t x = 1, y = 1, z = 1;
};

// ceil(n / d) for workgroup counts.
constexpr uint32_t div_up(uint64_t n, uint64_t d) {
  return static_cast<uint32_t>((n + d - 1) / d);
}

struct Timing {
  std::string label;  // as passed to timestamp()
  double ms;          // since the first timestamp of the recording
};

class CommandRecorder {
 public:
  explicit CommandRecorder(Device& device, uint32_t max_timestamps = 128);
  ~CommandRecorder();
  CommandRecorder(const CommandRecorder&) = delete;
  CommandRecorder& operator=(const CommandRecorder&) = delete;

  // Starts a new recording (waits for the previous submission if still in flight). A deferred
  // recording submits nothing until submit(): flush() only ends a part, finish() ends the
  // recording, and submit() then sends every part at once (a step recorded ahead of its turn).
  void begin(bool deferred = false);

  // Dry mode: every call checks its arguments as usual but nothing reaches Vulkan and submit()
  // runs nothing. Lets a caller walk its recording code to learn which pipelines it uses
  // (PipelineCache::Collector) before any exist. Switch only between recordings.
  void set_dry(bool dry);
  bool dry() const { return dry_; }

  // Binds `pipeline` (skipped if already bound), `buffers` at bindings 0..n-1 (offset + size of
  // each slice), the push constants (exactly the pipeline's push_constant_bytes), and dispatches.
  // Throws std::invalid_argument for a wrong buffer count, push size, misaligned offset or a range
  // above maxStorageBufferRange.
  void dispatch(const Pipeline& pipeline, std::span<const BufferSlice> buffers,
                std::span<const std::byte> push_constants, Groups groups);
  template <typename Push>
  requires std::is_trivially_copyable_v<Push>
  void dispatch(const Pipeline& pipeline, std::initializer_list<BufferSlice> buffers,
                const Push& push, Groups groups) {
    dispatch(pipeline, std::span<const BufferSlice>(buffers.begin(), buffers.size()),
             std::as_bytes(std::span<const Push>(&push, 1)), groups);
  }
  void dispatch(const Pipeline& pipeline, std::initializer_list<BufferSlice> buffers,
                Groups groups) {
    dispatch(pipeline, std::span<const BufferSlice>(buffers.begin(), buffers.size()), {}, groups);
  }

  // Makes all earlier shader/transfer writes visible to later shader/transfer reads and writes.
  void barrier();
  // Copies src.size bytes into dst (dst.size >= src.size).
  void copy(BufferSlice src, BufferSlice dst);
  // Fills dst with a repeated 32-bit word (dst.offset and dst.size multiples of 4).
  void fill(BufferSlice dst, uint32_t word);
  // Writes a GPU timestamp after all earlier work; ignored if the queue has no timestamps or the
  // recorder's capacity is used up.
  void timestamp(std::string_view label);

  // Submits what is recorded so far and goes on recording into a further command buffer of the
  // same recording, so the device starts on the first part while the host records the rest.
  // Ordering is kept (a barrier opens the new part); submit()/wait() cover every part.
  void flush();
  // Ends a deferred recording without submitting it; submit() sends it later.
  void finish();
  bool finished() const { return finished_; }
  // Ends and submits the recording (or a finished deferred one) without waiting.
  void submit();
  // Waits for the last submit(); then timings() and host reads of results are valid.
  void wait();
  void submit_and_wait() {
    submit();
    wait();
  }

  // The timestamps of the last finished submission (empty if timestamps are unsupported).
  std::vector<Timing> timings() const;
  uint32_t dispatch_count() const { return dispatches_; }
  VkCommandBuffer command_buffer() const { return cmd_; }

 private:
  void destroy();
  void end_recording();
  VkDescriptorSet allocate_set(VkDescriptorSetLayout layout);

  Device& device_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;  // the part being recorded: parts_[part_]
  std::vector<VkCommandBuffer> parts_;
  size_t part_ = 0;
  VkFence fence_ = VK_NULL_HANDLE;
  VkQueryPool queries_ = VK_NULL_HANDLE;
  uint32_t max_timestamps_ = 0;
  std::vector<std::string> labels_;
  std::vector<VkDescriptorPool> descriptor_pools_;
  size_t current_pool_ = 0;
  VkPipeline bound_ = VK_NULL_HANDLE;
  bool recording_ = false;
  bool in_flight_ = false;
  bool dry_ = false;
  bool unfenced_ = false;  // parts were flushed but the recording was never submitted
  bool deferred_ = false;  // this recording's parts wait for submit()
  bool finished_ = false;  // a deferred recording ended by finish(), not yet submitted
  void fence_flushed_parts();
  uint32_t dispatches_ = 0;
  // When the last submit() went to the queue and how long until wait() saw it done.
  std::chrono::steady_clock::time_point submitted_{};
  std::chrono::steady_clock::duration last_duration_{};
};

}  // namespace vkllm::vk
