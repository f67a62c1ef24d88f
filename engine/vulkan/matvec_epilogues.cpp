// MatmulKernels' decode Q|K|V product with RoPE and the KV-cache write fused in (matvec.comp's
// ROPE_KV_EPILOGUE variants): its argument checks and dispatches.
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
    record_matvec_q8(rec, args, kt.name, &e);
  else
    record_matvec_float(rec, args, kt.name, kt.unit == 4, &e);
}

}  // namespace vkllm::vk
