// How weight tensors sit in device memory. Most ggml block formats stay as the file stores them.
// The two common formats whose blocks are only 2-byte aligned, Q8_0 (34 bytes) and Q6_K (210),
// are repacked once after upload, in groups of 8 blocks: the 8 blocks without their 2-byte scale
// (32 / 208 bytes each, 16-byte aligned), then the 8 scales. The kernels then read every field
// with aligned vector loads instead of word loads and funnel shifts (on an H100 the int8-dot
// decode kernels of these types were bound by the number of loads, not by bandwidth). A group
// has the size of 8 file blocks, so block b still starts its group at (b / 8) * 8 file blocks
// and the kernels find its fields from the file layout's byte offset alone (dequant_weights.glsl).
//
// A tensor (or each separately bound part of one) is repacked on its own, from its first block;
// its allocation covers whole groups (device_weight_bytes), the last one possibly partial.
#pragma once

#include <cstdint>
#include <span>

#include "engine/gguf/tensor_type.h"
#include "engine/vulkan/buffer.h"

namespace vkllm::vk {

class CommandRecorder;
class PipelineCache;

// True if tensors of `type` are repacked on the device.
bool repacked_on_device(gguf::TensorType type);

// Device bytes of a tensor of `file_bytes` bytes in the file layout (whole groups when repacked).
uint64_t device_weight_bytes(gguf::TensorType type, uint64_t file_bytes);
// At most this much more than the file's bytes (one group of the largest repacked block, Q6_K's).
inline constexpr uint64_t kMaxRepackPaddingBytes = 8 * 210;

// Records the in-place repack of the tensor in `weights` (file layout, `file_bytes` bytes; the
// slice holds device_weight_bytes). Nothing for types stored as in the file. The caller puts a
// barrier between the upload and this, and between this and the kernels that read it.
void record_repack_weights(CommandRecorder& rec, PipelineCache& pipelines, gguf::TensorType type,
                           BufferSlice weights, uint64_t file_bytes);

// Blocking upload of a tensor in the file layout, repacked where its type is (tests, benchmarks).
void upload_weights(PipelineCache& pipelines, gguf::TensorType type, BufferSlice weights,
                    std::span<const uint8_t> file_bytes);

}  // namespace vkllm::vk
