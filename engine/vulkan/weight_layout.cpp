#include "engine/vulkan/weight_layout.h"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

#include "engine/vulkan/command_recorder.h"
#include "engine/vulkan/device.h"
#include "engine/vulkan/pipeline.h"
#include "engine/vulkan/transfer.h"

namespace vkllm::vk {

namespace {

using gguf::TensorType;

struct Repack {
  uint32_t block_bytes, scale_offset;
};

constexpr uint32_t kGroupBlocks = 8;

// The repacked formats: block size and where the 2-byte scale sits in it.
std::optional<Repack> repack_of(TensorType type) {
  switch (type) {
    case TensorType::Q8_0:
      return Repack{34, 0};
    case TensorType::Q6_K:
      return Repack{210, 208};  // the largest: kMaxRepackPaddingBytes
    default:
      return std::nullopt;
  }
}

}  // namespace

bool repacked_on_device(TensorType type) {
  return repack_of(type).has_value();
}

uint64_t device_weight_bytes(TensorType type, uint64_t file_bytes) {
  const auto r = repack_of(type);
  if (!r) return file_bytes;
  const uint64_t group = uint64_t{kGroupBlocks} * r->block_bytes;
  return (file_bytes + group - 1) / group * group;
}

void record_repack_weights(CommandRecorder& rec, PipelineCache& pipelines, TensorType type,
                           BufferSlice weights, uint64_t file_bytes) {
  const auto r = repack_of(type);
  if (!r || file_bytes == 0) return;
  if (file_bytes % r->block_bytes)
    throw std::invalid_argument("record_repack_weights: " + std::to_string(file_bytes) +
                                " bytes is not a whole number of " +
                                std::to_string(r->block_bytes) + "-byte blocks");
  const uint64_t device_bytes = device_weight_bytes(type, file_bytes);
  if (weights.size < device_bytes)
    throw std::invalid_argument("record_repack_weights: slice of " + std::to_string(weights.size) +
                                " bytes is below the tensor's " + std::to_string(device_bytes) +
                                " device bytes");
  const uint64_t groups = device_bytes / (kGroupBlocks * r->block_bytes);
  const uint32_t max_x = pipelines.device().caps().max_workgroup_count[0];
  const uint32_t gx = static_cast<uint32_t>(std::min<uint64_t>(groups, max_x));
  const uint64_t gy = (groups + gx - 1) / gx;
  if (gy > pipelines.device().caps().max_workgroup_count[1])
    throw std::invalid_argument("record_repack_weights: tensor of " + std::to_string(file_bytes) +
                                " bytes exceeds the device's grid");
  const Pipeline& pipeline = pipelines.get({.shader = "repack_blocks",
                                            .num_buffers = 1,
                                            .push_constant_bytes = 4,
                                            .spec = {r->block_bytes, r->scale_offset}});
  const uint32_t n_groups = static_cast<uint32_t>(groups);
  rec.dispatch(pipeline, {weights}, n_groups, Groups{gx, static_cast<uint32_t>(gy), 1});
}

void upload_weights(PipelineCache& pipelines, TensorType type, BufferSlice weights,
                    std::span<const uint8_t> file_bytes) {
  upload(pipelines.device(), weights, file_bytes);
  if (!repacked_on_device(type)) return;
  CommandRecorder rec(pipelines.device());
  rec.begin();
  rec.barrier();  // the upload's copy, when it went through one, before the repack reads
  record_repack_weights(rec, pipelines, type, weights, file_bytes.size());
  rec.submit_and_wait();
}

}  // namespace vkllm::vk
