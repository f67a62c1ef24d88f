// Recording row-wise kernels over rows that need not be packed: each operand is a buffer with an
// element offset and a row stride, passed to the kernel rather than bound at an offset (so any
// offset works, whatever the device's binding alignment). Gemma 3n's graph uses them on its AltUp
// streams (several vectors per token side by side) and per-layer inputs; they are general row
// operations for any model that needs them. Each function records one dispatch (no barrier). f32.
//
// RMSNorm without a weight is ops::rms_norm with an empty weight (ops.h).
#pragma once

#include <cstdint>

#include "engine/vulkan/buffer.h"

namespace vkllm::vk {
class CommandRecorder;
class PipelineCache;
}  // namespace vkllm::vk

namespace vkllm::vk::ops {

// Row r of an operand starts at element off + r * stride of buf. A stride of 0 repeats one row
// for every row (a weight read by each).
struct RowsRef {
  BufferSlice buf;
  uint32_t off = 0;
  uint32_t stride = 0;
};

// ---- Element-wise over `rows` rows of n (shaders/rows_binary.comp); out may alias a or b.
enum class RowsOp : uint32_t {
  AddScaled = 0,  // out = (a + b) * s
  Mul = 1,        // out = a * b
  Scale = 2,      // out = a * s (b not read)
  RowScale = 3,   // out = a * b[b.off + r * b.stride]: one factor a row (MoE pairs' weights)
};
void rows_binary(CommandRecorder& rec, PipelineCache& pipelines, RowsOp op, RowsRef a, RowsRef b,
                 RowsRef out, uint32_t n, uint32_t rows, float s = 1.0f);

// ---- Per-row statistics, one workgroup a row (shaders/row_stats.comp); out may alias x.
// Activation sparsity by a Gaussian top-k: out = max(x - (mean + std_mul * std), 0), with the
// row's mean and standard deviation over n - 1.
void gaussian_topk(CommandRecorder& rec, PipelineCache& pipelines, RowsRef x, RowsRef out,
                   uint32_t n, uint32_t rows, float std_mul);
// out = x * |ref| / |x| per row (Euclidean norms; a zero row of x gives zeros).
void match_magnitude(CommandRecorder& rec, PipelineCache& pipelines, RowsRef ref, RowsRef x,
                     RowsRef out, uint32_t n, uint32_t rows);

// ---- Mixing k parallel residual streams (AltUp; shaders/stream_mix.comp). A row of `streams`
// and of `out` holds k vectors of n elements side by side (vector i at off + r * stride + i * n).
inline constexpr uint32_t kMaxStreams = 8;
enum class StreamMix : uint32_t {
  Predict = 0,  // out_i = s_i + sum_j coefs[r][i * k + j] * s_j  (coefs: k * k per row)
  Correct = 1,  // out_i = s_i + (coefs[r][i] + 1) * (active - s_{i_active})  (coefs: k per row)
  Mean = 2,     // out = the mean of the k vectors (one vector per row of out)
};
struct StreamMixArgs {
  StreamMix mode = StreamMix::Predict;
  RowsRef streams, coefs, active, out;  // coefs: Predict, Correct; active: Correct only
  uint32_t n = 0, k = 0, rows = 0;
  uint32_t i_active = 0;
};
void stream_mix(CommandRecorder& rec, PipelineCache& pipelines, const StreamMixArgs& a);

}  // namespace vkllm::vk::ops
