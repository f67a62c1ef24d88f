#include "engine/runtime/weight_ops.h"

#include <stdexcept>
#include <string>

#include "engine/gguf/tensor_type.h"
#include "engine/vulkan/weight_layout.h"

namespace vkllm::runtime {

DeviceTensor stacked_matrix(const DeviceTensor& w, uint32_t slice, uint64_t alignment) {
  if (w.shape.size() != 3 || slice >= w.shape[2])
    throw std::runtime_error(w.name + " has no matrix " + std::to_string(slice));
  const uint64_t bytes = w.rows() * gguf::row_bytes(w.type, w.cols());
  const uint64_t at = slice * bytes;
  // Repacked types keep whole groups at their file offsets (weight_layout.h): a matrix starting
  // at a group boundary reads as a tensor of its own.
  if (w.parts.size() != 1 || at % alignment != 0 || vk::device_weight_bytes(w.type, at) != at)
    throw std::runtime_error(w.name + ": matrix " + std::to_string(slice) +
                             " of the stack cannot be bound on its own on this device");
  DeviceTensor m;
  m.name = w.name;
  m.type = w.type;
  m.shape = {w.shape[0], w.shape[1]};
  m.data = w.data.sub(at, w.data.size - at);
  m.parts = {{m.data, 0, static_cast<uint32_t>(w.rows())}};
  return m;
}

void record_product(vk::MatmulKernels& kernels, vk::CommandRecorder& rec, const DeviceTensor& w,
                    vk::MatmulArgs args, bool matvec) {
  args.type = w.type;
  args.cols = static_cast<uint32_t>(w.cols());
  const uint32_t rows = static_cast<uint32_t>(w.rows());
  if (args.y_stride == 0) args.y_stride = rows;
  const uint32_t y_offset = args.y_offset;
  for (const RowPart& part : w.parts) {
    args.weights = part.data;
    args.rows = part.rows;
    args.y_offset = y_offset + part.first_row;
    if (matvec)
      kernels.record_matvec(rec, args);
    else
      kernels.record_matmul(rec, args);
  }
}

void record_get_rows(vk::CommandRecorder& rec, vk::PipelineCache& pipelines, const DeviceTensor& w,
                     vk::ops::GetRowsArgs args) {
  args.type = gguf::type_name(w.type);
  args.row_elems = static_cast<uint32_t>(w.cols());
  args.row_bytes = static_cast<uint32_t>(gguf::row_bytes(w.type, w.cols()));
  args.part = w.parts.size() > 1;
  for (const RowPart& part : w.parts) {
    args.weights = part.data;
    args.first_row = part.first_row;
    args.n_rows = part.rows;
    vk::ops::get_rows(rec, pipelines, args);
  }
}

}  // namespace vkllm::runtime
