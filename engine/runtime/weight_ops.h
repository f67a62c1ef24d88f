// Products and embedding lookups on a model's weights, which may be stored as several runs of
// rows (DeviceTensor::parts) when a tensor is larger than one storage-buffer binding: one dispatch
// per part, each writing its own rows of the result.
#pragma once

#include "engine/runtime/model.h"
#include "engine/vulkan/matmul_ops.h"
#include "engine/vulkan/ops.h"

namespace vkllm::runtime {

// y = W x (or y += W x) for `batch` activation vectors: `args` gives x, y, batch, strides and
// accumulate; type, weights, rows and cols come from `w`. The decode kernel when `matvec`, the
// tiled GEMM otherwise.
void record_product(vk::MatmulKernels& kernels, vk::CommandRecorder& rec, const DeviceTensor& w,
                    vk::MatmulArgs args, bool matvec);

// Matrix `slice` of a stacked 3-D weight ([cols, rows, n], e.g. Gemma 3n's AltUp projections) as
// a 2-D tensor viewing the same memory. Throws std::runtime_error where the matrix cannot be
// bound on its own: a tensor split into parts, or a matrix that does not start at a multiple of
// `alignment` bytes (the device's storage-buffer offset alignment) and of the device layout's
// repack groups.
DeviceTensor stacked_matrix(const DeviceTensor& w, uint32_t slice, uint64_t alignment);

// out[t] = scale * row ids[t] of `w`: `args` gives ids, n_tokens, out, out_stride and scale.
void record_get_rows(vk::CommandRecorder& rec, vk::PipelineCache& pipelines, const DeviceTensor& w,
                     vk::ops::GetRowsArgs args);

}  // namespace vkllm::runtime
