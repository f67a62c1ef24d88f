#include "engine/vulkan/row_ops.h"

#include <algorithm>
#include <string>

#include "engine/vulkan/command_recorder.h"
#include "engine/vulkan/device.h"
#include "engine/vulkan/op_checks.h"
#include "engine/vulkan/pipeline.h"

namespace vkllm::vk::ops {
namespace {

constexpr uint32_t kRowOpsGroup = 256;
// Grid rows of the element-wise kernels, which step over the rest (any device allows 65535).
constexpr uint32_t kMaxGridRows = 65535;

// Checks that `rows` rows of `width` elements at r lie within its buffer.
void require_rows(const RowsRef& r, uint32_t width, uint32_t rows, const char* what) {
  const uint64_t end = r.off + uint64_t(rows - 1) * r.stride + width;
  require_arg(r.buf && end * 4 <= r.buf.size,
              std::string(what) + ": rows past the end of the buffer");
}

const Pipeline& row_pipeline(PipelineCache& pc, const char* shader, uint32_t buffers,
                             uint32_t push_bytes, uint32_t workgroup) {
  return pc.get({.shader = shader,
                 .num_buffers = buffers,
                 .push_constant_bytes = push_bytes,
                 .spec = {workgroup}});
}

}  // namespace

void rows_binary(CommandRecorder& rec, PipelineCache& pc, RowsOp op, RowsRef a, RowsRef b,
                 RowsRef out, uint32_t n, uint32_t rows, float s) {
  if (n == 0 || rows == 0) return;
  if (op == RowsOp::Scale) b = a;
  require_rows(a, n, rows, "rows_binary a");
  require_rows(b, op == RowsOp::RowScale ? 1 : n, rows, "rows_binary b");
  require_rows(out, n, rows, "rows_binary out");
  struct {
    uint32_t n, rows, op;
    float s;
    uint32_t a_off, a_stride, b_off, b_stride, o_off, o_stride;
  } push{n,       rows,      static_cast<uint32_t>(op), s, a.off, a.stride, b.off, b.stride,
         out.off, out.stride};
  const Pipeline& p = row_pipeline(pc, "rows_binary", 3, sizeof(push), kRowOpsGroup);
  rec.dispatch(p, {a.buf, b.buf, out.buf}, push,
               {div_up(n, kRowOpsGroup), std::min(rows, kMaxGridRows), 1});
}

namespace {
void row_stats(CommandRecorder& rec, PipelineCache& pc, uint32_t mode, RowsRef x, RowsRef ref,
               RowsRef out, uint32_t n, uint32_t rows, float s) {
  if (n == 0 || rows == 0) return;
  require_rows(x, n, rows, "row_stats x");
  require_rows(ref, n, rows, "row_stats ref");
  require_rows(out, n, rows, "row_stats out");
  struct {
    uint32_t n, rows, mode;
    float s;
    uint32_t x_off, x_stride, r_off, r_stride, o_off, o_stride;
  } push{n, rows, mode, s, x.off, x.stride, ref.off, ref.stride, out.off, out.stride};
  // Enough invocations for 4+ elements each, within 64..512 (power of two: reduce.glsl).
  uint32_t wg = 64;
  while (wg < 512 && wg * 4 < n) wg *= 2;
  const bool sg = pc.device().caps().subgroup_arithmetic();
  const Pipeline& p = row_pipeline(pc, sg ? "row_stats" : "row_stats_shmem", 3, sizeof(push), wg);
  const uint32_t gx = std::min(rows, kMaxGridRows);
  rec.dispatch(p, {x.buf, ref.buf, out.buf}, push, {gx, div_up(rows, gx), 1});
}
}  // namespace

void gaussian_topk(CommandRecorder& rec, PipelineCache& pc, RowsRef x, RowsRef out, uint32_t n,
                   uint32_t rows, float std_mul) {
  row_stats(rec, pc, 0, x, x, out, n, rows, std_mul);
}

void match_magnitude(CommandRecorder& rec, PipelineCache& pc, RowsRef ref, RowsRef x, RowsRef out,
                     uint32_t n, uint32_t rows) {
  row_stats(rec, pc, 1, x, ref, out, n, rows, 0.f);
}

void stream_mix(CommandRecorder& rec, PipelineCache& pc, const StreamMixArgs& a) {
  if (a.n == 0 || a.rows == 0) return;
  require_arg(a.k >= 1 && a.k <= kMaxStreams, "stream_mix: " + std::to_string(a.k) +
                                                  " streams (1 to " + std::to_string(kMaxStreams) +
                                                  " supported)");
  require_arg(a.i_active < a.k, "stream_mix: the active stream is not one of the streams");
  require_rows(a.streams, a.k * a.n, a.rows, "stream_mix streams");
  const uint32_t out_width = a.mode == StreamMix::Mean ? a.n : a.k * a.n;
  require_rows(a.out, out_width, a.rows, "stream_mix out");
  RowsRef coefs = a.coefs, active = a.active;
  if (a.mode == StreamMix::Mean) coefs = a.streams;
  if (a.mode != StreamMix::Correct) active = a.streams;
  require_rows(coefs, a.mode == StreamMix::Predict ? a.k * a.k : a.k, a.rows, "stream_mix coefs");
  require_rows(active, a.n, a.rows, "stream_mix active");
  struct {
    uint32_t n, k, rows, mode, i_active, s_off, s_stride, c_off, c_stride, a_off, a_stride, o_off,
        o_stride;
  } push{a.n,          a.k,           a.rows,           static_cast<uint32_t>(a.mode),
         a.i_active,   a.streams.off, a.streams.stride, coefs.off,
         coefs.stride, active.off,    active.stride,    a.out.off,
         a.out.stride};
  const Pipeline& p = row_pipeline(pc, "stream_mix", 4, sizeof(push), kRowOpsGroup);
  rec.dispatch(p, {a.streams.buf, coefs.buf, active.buf, a.out.buf}, push,
               {div_up(a.n, kRowOpsGroup), std::min(a.rows, kMaxGridRows), 1});
}

}  // namespace vkllm::vk::ops
