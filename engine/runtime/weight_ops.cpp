#include "engine/runtime/weight_ops.h"

#include "engine/gguf/tensor_type.h"

namespace vkllm::runtime {

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
