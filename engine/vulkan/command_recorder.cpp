#include "engine/vulkan/command_recorder.h"

#include <chrono>
#include <cstdlib>
#include <stdexcept>

#include "engine/vulkan/device.h"
#include "engine/vulkan/pipeline.h"
#include "engine/vulkan/vk_error.h"

namespace vkllm::vk {

using Clock = std::chrono::steady_clock;

CommandRecorder::CommandRecorder(Device& device, uint32_t max_timestamps) : device_(device) {
  VkDevice d = device.handle();
  try {
    auto pool_info = make<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
    pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool_info.queueFamilyIndex = device.queue_family();
    check(vkCreateCommandPool(d, &pool_info, nullptr, &pool_), "vkCreateCommandPool");
    auto alloc = make<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    alloc.commandPool = pool_;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    check(vkAllocateCommandBuffers(d, &alloc, &cmd_), "vkAllocateCommandBuffers");
    parts_.push_back(cmd_);
    auto fence_info = make<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
    check(vkCreateFence(d, &fence_info, nullptr, &fence_), "vkCreateFence");
    if (device.caps().timestamps && max_timestamps > 0) {
      auto q = make<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
      q.queryType = VK_QUERY_TYPE_TIMESTAMP;
      q.queryCount = max_timestamps;
      check(vkCreateQueryPool(d, &q, nullptr, &queries_), "vkCreateQueryPool");
      max_timestamps_ = max_timestamps;
    }
  } catch (...) {
    destroy();
    throw;
  }
}

CommandRecorder::~CommandRecorder() {
  destroy();
}

void CommandRecorder::destroy() {
  VkDevice d = device_.handle();
  if (unfenced_ && fence_) {
    try {
      fence_flushed_parts();
    } catch (...) {
      vkDeviceWaitIdle(d);  // destruction must not throw; wait for everything instead
      in_flight_ = false;
    }
  }
  if (in_flight_ && fence_) vkWaitForFences(d, 1, &fence_, VK_TRUE, UINT64_MAX);
  for (VkDescriptorPool p : descriptor_pools_) vkDestroyDescriptorPool(d, p, nullptr);
  descriptor_pools_.clear();
  if (queries_) vkDestroyQueryPool(d, queries_, nullptr);
  if (fence_) vkDestroyFence(d, fence_, nullptr);
  if (pool_) vkDestroyCommandPool(d, pool_, nullptr);  // frees cmd_
  queries_ = VK_NULL_HANDLE;
  fence_ = VK_NULL_HANDLE;
  pool_ = VK_NULL_HANDLE;
}

void CommandRecorder::set_dry(bool dry) {
  if (recording_ && !dry_) throw std::logic_error("CommandRecorder::set_dry while recording");
  recording_ = false;  // an unfinished dry recording has nothing to release
  dry_ = dry;
}

// A recording abandoned after flush() (an exception while recording) still has parts on the
// queue: an empty submission with the fence lets wait() cover them before anything is reused.
void CommandRecorder::fence_flushed_parts() {
  if (!unfenced_) return;
  unfenced_ = false;
  check(vkResetFences(device_.handle(), 1, &fence_), "vkResetFences");
  device_.submit(make<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO), fence_);
  submitted_ = Clock::now();
  in_flight_ = true;
}

void CommandRecorder::begin(bool deferred) {
  fence_flushed_parts();
  if (in_flight_) wait();
  deferred_ = deferred;
  finished_ = false;
  if (dry_) {
    labels_.clear();
    bound_ = VK_NULL_HANDLE;
    dispatches_ = 0;
    recording_ = true;
    return;
  }
  VkDevice d = device_.handle();
  for (VkCommandBuffer c : parts_) check(vkResetCommandBuffer(c, 0), "vkResetCommandBuffer");
  part_ = 0;
  cmd_ = parts_[0];
  for (VkDescriptorPool p : descriptor_pools_)
    check(vkResetDescriptorPool(d, p, 0), "vkResetDescriptorPool");
  current_pool_ = 0;
  auto info = make<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  info.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(cmd_, &info), "vkBeginCommandBuffer");
  if (queries_) vkCmdResetQueryPool(cmd_, queries_, 0, max_timestamps_);
  labels_.clear();
  bound_ = VK_NULL_HANDLE;
  dispatches_ = 0;
  recording_ = true;
}

VkDescriptorSet CommandRecorder::allocate_set(VkDescriptorSetLayout layout) {
  VkDevice d = device_.handle();
  for (;; ++current_pool_) {
    if (current_pool_ == descriptor_pools_.size()) {
      VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 8192};
      auto info = make<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
      info.maxSets = 1024;
      info.poolSizeCount = 1;
      info.pPoolSizes = &size;
      VkDescriptorPool pool = VK_NULL_HANDLE;
      check(vkCreateDescriptorPool(d, &info, nullptr, &pool), "vkCreateDescriptorPool");
      descriptor_pools_.push_back(pool);
    }
    auto alloc = make<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
    alloc.descriptorPool = descriptor_pools_[current_pool_];
    alloc.descriptorSetCount = 1;
    alloc.pSetLayouts = &layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    VkResult r = vkAllocateDescriptorSets(d, &alloc, &set);
    if (r == VK_SUCCESS) return set;
    if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL)
      check(r, "vkAllocateDescriptorSets");
  }
}

void CommandRecorder::dispatch(const Pipeline& pipeline, std::span<const BufferSlice> buffers,
                               std::span<const std::byte> push_constants, Groups groups) {
  if (!recording_) throw std::logic_error("CommandRecorder::dispatch before begin()");
  const PipelineDesc& desc = pipeline.desc();
  if (buffers.size() != desc.num_buffers)
    throw std::invalid_argument("dispatch of " + desc.shader + ": " +
                                std::to_string(buffers.size()) + " buffers given, pipeline has " +
                                std::to_string(desc.num_buffers));
  if (push_constants.size() != desc.push_constant_bytes)
    throw std::invalid_argument(
        "dispatch of " + desc.shader + ": " + std::to_string(push_constants.size()) +
        " bytes of push constants given, pipeline has " + std::to_string(desc.push_constant_bytes));
  const auto& caps = device_.caps();
  VkDescriptorBufferInfo infos[16];
  VkWriteDescriptorSet writes[16];
  if (buffers.size() > 16) throw std::invalid_argument("dispatch: more than 16 buffers");
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferSlice& b = buffers[i];
    if (!b.buffer || b.size == 0)
      throw std::invalid_argument("dispatch of " + desc.shader + ": binding " + std::to_string(i) +
                                  " is empty");
    if (b.offset % caps.storage_buffer_alignment)
      throw std::invalid_argument("dispatch of " + desc.shader + ": binding " + std::to_string(i) +
                                  " offset " + std::to_string(b.offset) + " is not a multiple of " +
                                  std::to_string(caps.storage_buffer_alignment));
    if (b.size > caps.max_storage_buffer_range)
      throw std::invalid_argument("dispatch of " + desc.shader + ": binding " + std::to_string(i) +
                                  " range " + std::to_string(b.size) +
                                  " exceeds maxStorageBufferRange " +
                                  std::to_string(caps.max_storage_buffer_range));
    infos[i] = {b.buffer, b.offset, b.size};
    writes[i] = make<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
    writes[i].dstBinding = static_cast<uint32_t>(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  if (groups.x == 0 || groups.y == 0 || groups.z == 0) return;  // nothing to do
  for (int i = 0; i < 3; ++i) {
    uint32_t g = i == 0 ? groups.x : i == 1 ? groups.y : groups.z;
    if (g > caps.max_workgroup_count[i])
      throw std::invalid_argument("dispatch of " + desc.shader + ": " + std::to_string(g) +
                                  " workgroups in dimension " + std::to_string(i) +
                                  " exceed the device limit " +
                                  std::to_string(caps.max_workgroup_count[i]));
  }
  if (dry_) {
    ++dispatches_;
    return;
  }
  if (pipeline.is_placeholder())
    throw std::logic_error("dispatch of " + desc.shader + ": placeholder pipeline");
  if (bound_ != pipeline.handle()) {
    vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.handle());
    bound_ = pipeline.handle();
  }
  const auto n = static_cast<uint32_t>(buffers.size());
  if (n > 0) {
    if (pipeline.uses_push_descriptors()) {
      device_.cmd_push_descriptor_set()(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout(), 0,
                                        n, writes);
    } else {
      VkDescriptorSet set = allocate_set(pipeline.set_layout());
      for (uint32_t i = 0; i < n; ++i) writes[i].dstSet = set;
      vkUpdateDescriptorSets(device_.handle(), n, writes, 0, nullptr);
      vkCmdBindDescriptorSets(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout(), 0, 1, &set,
                              0, nullptr);
    }
  }
  if (!push_constants.empty())
    vkCmdPushConstants(cmd_, pipeline.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0,
                       static_cast<uint32_t>(push_constants.size()), push_constants.data());
  vkCmdDispatch(cmd_, groups.x, groups.y, groups.z);
  ++dispatches_;
}

void CommandRecorder::barrier() {
  if (dry_) return;
  auto b = make<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                    VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages =
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  vkCmdPipelineBarrier(cmd_, stages, stages, 0, 1, &b, 0, nullptr, 0, nullptr);
}

void CommandRecorder::copy(BufferSlice src, BufferSlice dst) {
  if (dst.size < src.size)
    throw std::invalid_argument("copy of " + std::to_string(src.size) + " bytes into a slice of " +
                                std::to_string(dst.size));
  if (src.size == 0 || dry_) return;
  VkBufferCopy region{src.offset, dst.offset, src.size};
  vkCmdCopyBuffer(cmd_, src.buffer, dst.buffer, 1, &region);
}

void CommandRecorder::fill(BufferSlice dst, uint32_t word) {
  if (dst.offset % 4 || dst.size % 4)
    throw std::invalid_argument("fill: offset " + std::to_string(dst.offset) + " and size " +
                                std::to_string(dst.size) + " must be multiples of 4");
  if (dst.size && !dry_) vkCmdFillBuffer(cmd_, dst.buffer, dst.offset, dst.size, word);
}

void CommandRecorder::timestamp(std::string_view label) {
  if (!queries_ || labels_.size() >= max_timestamps_ || dry_) return;
  vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_,
                      static_cast<uint32_t>(labels_.size()));
  labels_.emplace_back(label);
}

void CommandRecorder::flush() {
  if (!recording_) throw std::logic_error("CommandRecorder::flush before begin()");
  if (dry_) return;
  check(vkEndCommandBuffer(cmd_), "vkEndCommandBuffer");
  if (!deferred_) {
    auto info = make<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
    info.commandBufferCount = 1;
    info.pCommandBuffers = &cmd_;
    // No fence: the one submit() attaches signals after all earlier submissions of the queue.
    device_.submit(info, VK_NULL_HANDLE);
    unfenced_ = true;
  }
  if (++part_ == parts_.size()) {
    auto alloc = make<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    alloc.commandPool = pool_;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    VkCommandBuffer c = VK_NULL_HANDLE;
    check(vkAllocateCommandBuffers(device_.handle(), &alloc, &c), "vkAllocateCommandBuffers");
    parts_.push_back(c);
  }
  cmd_ = parts_[part_];
  auto begin_info = make<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  begin_info.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(cmd_, &begin_info), "vkBeginCommandBuffer");
  bound_ = VK_NULL_HANDLE;
  // Pipeline barriers order against everything earlier in submission order, the parts already
  // submitted included.
  barrier();
}

// Results are read by the host after wait(): make device writes visible to host reads.
void CommandRecorder::end_recording() {
  auto to_host = make<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  to_host.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, nullptr, 0, nullptr);
  check(vkEndCommandBuffer(cmd_), "vkEndCommandBuffer");
  recording_ = false;
}

void CommandRecorder::finish() {
  if (!recording_ || !deferred_)
    throw std::logic_error("CommandRecorder::finish outside a deferred recording");
  if (!dry_) end_recording();
  recording_ = false;
  finished_ = true;
}

void CommandRecorder::submit() {
  if (!recording_ && !finished_) throw std::logic_error("CommandRecorder::submit before begin()");
  if (dry_) {
    recording_ = finished_ = deferred_ = false;
    return;
  }
  if (recording_) {
    if (deferred_)
      finish();
    else
      end_recording();
  }
  check(vkResetFences(device_.handle(), 1, &fence_), "vkResetFences");
  auto info = make<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  // A deferred recording's parts go in one submission; otherwise the earlier parts are already
  // on the queue and only the last is left.
  info.commandBufferCount = deferred_ ? static_cast<uint32_t>(part_ + 1) : 1;
  info.pCommandBuffers = deferred_ ? parts_.data() : &cmd_;
  finished_ = false;
  deferred_ = false;
  device_.submit(info, fence_);
  submitted_ = Clock::now();
  unfenced_ = false;
  in_flight_ = true;
}

namespace {
// How long wait() may poll the fence. A thread asleep in vkWaitForFences wakes 0.1-0.3 ms after
// the GPU is done on NVIDIA (measured on an H100: 1B decode steps of 1.43 ms GPU took 1.6-1.8 ms
// wall time, 1.47 ms when polling), which is a tenth of a small model's decode step. Polling
// costs a busy core, so it only covers the end of a wait (see wait()), and not at all on CPU
// devices (lavapipe), whose workers need the cores. KernelTuning::fence_spin_us overrides.
std::chrono::microseconds fence_spin(const Device& device) {
  const int32_t tuned = device.tuning().fence_spin_us;
  if (tuned >= 0) return std::chrono::microseconds(tuned);
  return std::chrono::microseconds(device.caps().is_cpu() ? 0 : 2000);
}
}  // namespace

void CommandRecorder::wait() {
  if (!in_flight_) return;
  VkDevice d = device_.handle();
  auto finished = [&] {
    in_flight_ = false;
    last_duration_ = Clock::now() - submitted_;
  };
  if (const auto spin = fence_spin(device_); spin.count() > 0) {
    // Sleep through about three quarters of what the last submission took, then poll, so the
    // busy part is short when consecutive steps are alike (decode).
    const auto wake = submitted_ + last_duration_ * 3 / 4;
    if (const auto now = Clock::now(); wake > now) {
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wake - now).count();
      const VkResult r = vkWaitForFences(d, 1, &fence_, VK_TRUE, static_cast<uint64_t>(ns));
      if (r == VK_SUCCESS) return finished();
      if (r != VK_TIMEOUT) check(r, "vkWaitForFences");
    }
    const auto until = Clock::now() + spin;
    do {
      const VkResult r = vkGetFenceStatus(d, fence_);
      if (r == VK_SUCCESS) return finished();
      if (r != VK_NOT_READY) check(r, "vkGetFenceStatus");
    } while (Clock::now() < until);
  }
  check(vkWaitForFences(d, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  finished();
}

std::vector<Timing> CommandRecorder::timings() const {
  std::vector<Timing> out;
  if (!queries_ || labels_.empty() || in_flight_ || recording_) return out;
  std::vector<uint64_t> ticks(labels_.size());
  check(vkGetQueryPoolResults(device_.handle(), queries_, 0, static_cast<uint32_t>(ticks.size()),
                              ticks.size() * sizeof(uint64_t), ticks.data(), sizeof(uint64_t),
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
        "vkGetQueryPoolResults");
  const double ns = device_.caps().timestamp_period_ns;
  for (size_t i = 0; i < ticks.size(); ++i)
    out.push_back({labels_[i], double(ticks[i] - ticks[0]) * ns * 1e-6});
  return out;
}

}  // namespace vkllm::vk
