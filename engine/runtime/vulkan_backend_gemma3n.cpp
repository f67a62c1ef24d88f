// The Vulkan backend's Gemma 3n operations (step_backend.h documents each): the row kernels of
// engine/vulkan/row_ops.h, and RMSNorm without a weight through the usual norm kernel.
#include <stdexcept>
#include <string>

#include "engine/runtime/vulkan_backend_impl.h"

namespace vkllm::runtime::detail {

void VulkanBackend::rms_norm_plain(Rows x, Rows y, uint32_t n, uint32_t rows) {
  vk::ops::rms_norm(*rec_, ctx_.pipelines(), norm_rows(x, y, n, rows));
  wrote(y.act);
}

void VulkanBackend::add_rows(Rows a, Rows b, Rows out, uint32_t n, uint32_t rows, float scale) {
  vk::ops::rows_binary(*rec_, ctx_.pipelines(), vk::ops::RowsOp::AddScaled, rows_ref(a, n),
                       rows_ref(b, n), rows_ref(out, n), n, rows, scale);
  wrote(out.act);
}

void VulkanBackend::mul_rows(Rows a, Rows b, Rows out, uint32_t n, uint32_t rows) {
  vk::ops::rows_binary(*rec_, ctx_.pipelines(), vk::ops::RowsOp::Mul, rows_ref(a, n),
                       rows_ref(b, n), rows_ref(out, n), n, rows);
  wrote(out.act);
}

void VulkanBackend::mul_weight(Rows x, WeightRef w, Rows out, uint32_t n, uint32_t rows) {
  const DeviceTensor& t = get(w);
  // Norm-like vectors are f32 in every GGUF the converters write (as on the CPU backend); a
  // 2-D one (Mamba-2's grouped ssm_norm, [n / groups, groups]) is read as its n values in order.
  if (t.type != gguf::TensorType::F32 || uint64_t(t.cols()) * t.rows() != n)
    throw std::runtime_error(t.name + ": the Vulkan backend reads this weight as " +
                             std::to_string(n) + " f32 values");
  vk::ops::rows_binary(*rec_, ctx_.pipelines(), vk::ops::RowsOp::Mul, rows_ref(x, n),
                       {t.data, 0, 0}, rows_ref(out, n), n, rows);
  wrote(out.act);
}

void VulkanBackend::scale_rows(Rows x, uint32_t n, uint32_t rows, float s) {
  vk::ops::rows_binary(*rec_, ctx_.pipelines(), vk::ops::RowsOp::Scale, rows_ref(x, n),
                       rows_ref(x, n), rows_ref(x, n), n, rows, s);
  wrote(x.act);
}

void VulkanBackend::gaussian_topk(Rows x, uint32_t n, uint32_t rows, float std_mul) {
  vk::ops::gaussian_topk(*rec_, ctx_.pipelines(), rows_ref(x, n), rows_ref(x, n), n, rows, std_mul);
  wrote(x.act);
}

void VulkanBackend::match_magnitude(Rows ref, Rows x, Rows out, uint32_t n, uint32_t rows) {
  vk::ops::match_magnitude(*rec_, ctx_.pipelines(), rows_ref(ref, n), rows_ref(x, n),
                           rows_ref(out, n), n, rows);
  wrote(out.act);
}

void VulkanBackend::altup_predict(Rows streams, Rows coefs, Rows out, uint32_t n, uint32_t k,
                                  uint32_t rows) {
  vk::ops::StreamMixArgs a;
  a.mode = vk::ops::StreamMix::Predict;
  a.streams = rows_ref(streams, n * k);
  a.coefs = rows_ref(coefs, k * k);
  a.out = rows_ref(out, n * k);
  a.n = n;
  a.k = k;
  a.rows = rows;
  vk::ops::stream_mix(*rec_, ctx_.pipelines(), a);
  wrote(out.act);
}

void VulkanBackend::altup_correct(Rows pred, Rows active, Rows coefs, Rows out, uint32_t n,
                                  uint32_t k, uint32_t i_active, uint32_t rows) {
  vk::ops::StreamMixArgs a;
  a.mode = vk::ops::StreamMix::Correct;
  a.streams = rows_ref(pred, n * k);
  a.active = rows_ref(active, n);
  a.coefs = rows_ref(coefs, k);
  a.out = rows_ref(out, n * k);
  a.n = n;
  a.k = k;
  a.rows = rows;
  a.i_active = i_active;
  vk::ops::stream_mix(*rec_, ctx_.pipelines(), a);
  wrote(out.act);
}

void VulkanBackend::mean_streams(Rows streams, Rows out, uint32_t n, uint32_t k, uint32_t rows) {
  vk::ops::StreamMixArgs a;
  a.mode = vk::ops::StreamMix::Mean;
  a.streams = rows_ref(streams, n * k);
  a.out = rows_ref(out, n);
  a.n = n;
  a.k = k;
  a.rows = rows;
  vk::ops::stream_mix(*rec_, ctx_.pipelines(), a);
  wrote(out.act);
}

}  // namespace vkllm::runtime::detail
