// MatmulKernels' decode products with fused epilogues (matvec.comp's NORM_EPILOGUE,
// GLU_EPILOGUE and ROPE_KV_EPILOGUE variants): their argument checks and dispatches.
#include <stdexcept>
#include <string>
#include <utility>

#include "engine/vulkan/device.h"
#include "engine/vulkan/matmul_detail.h"
#include "engine/vulkan/pipeline.h"
#include "engine/vulkan/weight_layout.h"

namespace vkllm::vk {

using gguf::TensorType;
using namespace detail;

void detail::dispatch_rope_kv(PipelineCache& pipelines, CommandRecorder& rec,
                              const MatmulArgs& args, const std::string& shader, const Push& push,
                              const RopeKvEpilogue& e, BufferSlice x, std::vector<uint32_t> spec,
                              Groups groups) {
  const ops::RopeParams& r = e.rope;
  struct {
    Push base;
    uint32_t head_dim, n_dims, q_rows, kv_rows, row_base, n_seqs, block_size, rope_flags;
    float freq_base, freq_scale;
  } rope_push{push,
              r.head_dim,
              r.n_dims ? r.n_dims : r.head_dim,
              e.q_rows,
              e.kv_rows,
              e.row_base,
              e.batch.n_seqs,
              e.k_cache.block_size,
              r.freq_factors ? 2u : 0u,
              r.freq_base,
              r.freq_scale};
  const BufferSlice factors = r.freq_factors ? r.freq_factors : e.batch.meta;
  if (args.norm_weight) {
    const struct {
      decltype(rope_push) rope;
      float eps;
    } norm_push{rope_push, args.norm_eps};
    const Pipeline& pipeline = pipelines.get({.shader = shader + "_norm_in",
                                              .num_buffers = 8,
                                              .push_constant_bytes = sizeof(norm_push),
                                              .spec = std::move(spec)});
    rec.dispatch(pipeline,
                 {args.weights, x, args.y, e.batch.meta, e.k_cache.data, e.v_cache.data, factors,
                  args.norm_weight},
                 norm_push, groups);
    return;
  }
  const Pipeline& pipeline = pipelines.get({.shader = shader,
                                            .num_buffers = 7,
                                            .push_constant_bytes = sizeof(rope_push),
                                            .spec = std::move(spec)});
  rec.dispatch(pipeline,
               {args.weights, x, args.y, e.batch.meta, e.k_cache.data, e.v_cache.data, factors},
               rope_push, groups);
}

bool MatmulKernels::can_fuse_norm(TensorType type, uint32_t rows, uint32_t batch, uint32_t y_offset,
                                  uint32_t y_stride) const {
  return int8_dot(type) && batch >= 1 && batch <= kMaxMatvecColumns && rows % 32 == 0 &&
         y_offset % 4 == 0 && (y_stride ? y_stride : rows) % 4 == 0;
}

void MatmulKernels::record_matvec_norm(CommandRecorder& rec, const MatmulArgs& args,
                                       const NormEpilogue& norm) {
  const KernelType kt = validate("record_matvec_norm", args);
  if (!args.xq || !can_fuse_norm(args.type, args.rows, args.batch, args.y_offset, args.y_stride))
    throw std::invalid_argument(
        "record_matvec_norm: needs q8 activations, an int8-dot type, at most " +
        std::to_string(kMaxMatvecColumns) + " vectors, rows a multiple of 32 and y offset and " +
        "stride multiples of 4");
  const uint32_t stride = norm.y_stride ? norm.y_stride : args.rows;
  if (stride % 4 || stride < args.rows)
    throw std::invalid_argument("record_matvec_norm: norm y_stride=" + std::to_string(stride) +
                                " must be a multiple of 4 and >= rows");
  if (norm.y.size < (uint64_t{args.batch - 1} * stride + args.rows) * 4 ||
      norm.weight.size < uint64_t{args.rows} * 4 ||
      norm.q8.size < q8_activation_bytes(args.rows, args.batch) || norm.counter.size < 4)
    throw std::invalid_argument("record_matvec_norm: a norm slice is smaller than the shape");
  record_matvec_q8(rec, args, kt.name, &norm, nullptr);
}

void MatmulKernels::record_matvec_glu(CommandRecorder& rec, const MatmulArgs& args,
                                      const GluEpilogue& glu) {
  const KernelType kt = validate("record_matvec_glu", args);
  if (!args.xq || args.accumulate ||
      !can_fuse_glu(args.type, args.rows, args.batch, args.y_offset, args.y_stride))
    throw std::invalid_argument(
        "record_matvec_glu: needs q8 activations, no accumulate, an int8-dot type, at most " +
        std::to_string(kMaxMatvecColumns) + " vectors, rows a multiple of 32 and y offset and " +
        "stride multiples of 4");
  if (glu.act > 1) throw std::invalid_argument("record_matvec_glu: unknown activation");
  if (glu.up_rows < args.rows)
    throw std::invalid_argument("record_matvec_glu: up_rows=" + std::to_string(glu.up_rows) +
                                " overlaps the " + std::to_string(args.rows) + " gate rows");
  const uint64_t weight_rows = uint64_t{glu.up_rows} + args.rows;
  if (weight_rows > UINT32_MAX ||
      args.weights.size <
          device_weight_bytes(args.type,
                              weight_tensor_bytes(args.type, uint32_t(weight_rows), args.cols)) +
              kWeightReadSlackBytes)
    throw std::invalid_argument("record_matvec_glu: the weights slice does not hold the " +
                                std::to_string(weight_rows) + " gate and up rows");
  if (glu.q8.size < q8_activation_bytes(args.rows, args.batch) ||
      glu.counters.size < glu_counter_words(args.rows) * 4)
    throw std::invalid_argument(
        "record_matvec_glu: a q8 or counters slice is smaller than the shape");
  if (glu.q8.buffer == args.xq.buffer && glu.q8.offset < args.xq.offset + args.xq.size &&
      args.xq.offset < glu.q8.offset + glu.q8.size)
    throw std::invalid_argument("record_matvec_glu: the q8 output overlaps the q8 input");
  record_matvec_q8(rec, args, kt.name, nullptr, &glu);
}

bool MatmulKernels::can_fuse_rope_kv(TensorType type, const ops::RopeParams& rope) const {
  return !rope.neox && has_matmul_kernels(type) && (int8_dot(type) || !tuning_.shared_reduction);
}

void MatmulKernels::record_matvec_rope_kv(CommandRecorder& rec, const MatmulArgs& args,
                                          const RopeKvEpilogue& e) {
  const KernelType kt = validate("record_matvec_rope_kv", args);
  const ops::RopeParams& r = e.rope;
  const uint32_t n_dims = r.n_dims ? r.n_dims : r.head_dim;
  const auto fail = [](const std::string& why) {
    throw std::invalid_argument("record_matvec_rope_kv: " + why);
  };
  if (args.accumulate || !can_fuse_rope_kv(args.type, r))
    fail("needs no accumulate, the normal RoPE order and subgroup arithmetic (or the int8 dot)");
  if (r.head_dim == 0 || r.head_dim % 2 || n_dims % 2 || n_dims > r.head_dim)
    fail("head_dim " + std::to_string(r.head_dim) + " and n_dims " + std::to_string(n_dims) +
         " must be even, n_dims <= head_dim");
  if (e.q_rows % r.head_dim || e.kv_rows % r.head_dim || e.kv_rows == 0 ||
      e.row_base % r.head_dim || args.rows % r.head_dim ||
      uint64_t{e.row_base} + args.rows > uint64_t{e.q_rows} + 2ull * e.kv_rows)
    fail("rows " + std::to_string(e.row_base) + ".." + std::to_string(e.row_base + args.rows) +
         " must be whole heads within q_rows + 2 * kv_rows");
  if (e.batch.n_tokens != args.batch || !e.batch.meta || e.batch.n_seqs == 0)
    fail("the batch metadata must describe the product's " + std::to_string(args.batch) +
         " tokens");
  const uint32_t kv_heads = e.kv_rows / r.head_dim;
  if (e.k_cache.n_kv_heads != kv_heads || e.v_cache.n_kv_heads != kv_heads ||
      e.k_cache.block_size == 0 || e.k_cache.block_size != e.v_cache.block_size ||
      !e.k_cache.data || !e.v_cache.data)
    fail("the K and V caches must hold " + std::to_string(kv_heads) +
         " heads per block, blocks of one positive size");
  if (r.freq_factors && r.freq_factors.size < uint64_t{n_dims / 2} * 4)
    fail("freq_factors holds fewer than n_dims / 2 floats");
  if (args.xq && int8_dot(args.type) && !args.norm_weight)
    record_matvec_q8(rec, args, kt.name, nullptr, nullptr, &e);
  else
    record_matvec_float(rec, args, kt.name, kt.unit == 4, &e);
}

}  // namespace vkllm::vk
