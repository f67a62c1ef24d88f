// MatmulKernels' decode products (matvec.comp): the int8-dot kernels on q8 activations and the
// float-activation ones, which may read their input through its RMSNorm (NORM_IN). The fused
// epilogues' variants are in matvec_epilogues.cpp.
#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

#include "engine/vulkan/device.h"
#include "engine/vulkan/matmul_detail.h"
#include "engine/vulkan/matmul_ops.h"
#include "engine/vulkan/pipeline.h"
#include "engine/vulkan/weight_layout.h"

namespace vkllm::vk {

using gguf::TensorType;
using namespace detail;

void MatmulKernels::record_matvec_q8(CommandRecorder& rec, const MatmulArgs& args,
                                     const std::string& type_name, const RopeKvEpilogue* rope_kv) {
  const DeviceCapabilities& caps = pipelines_.device().caps();
  const uint32_t ncols = columns_per_pass(args.batch);
  if (args.norm_weight)
    throw std::invalid_argument("record_matvec: q8 activations cannot be read through a norm");
  if (args.xq.size < q8_activation_bytes(args.cols, args.batch))
    throw std::invalid_argument("record_matvec: xq slice of " + std::to_string(args.xq.size) +
                                " bytes is below the " +
                                std::to_string(q8_activation_bytes(args.cols, args.batch)) +
                                " bytes of q8 activations the shape reads");
  // One 32-weight group per thread and step. Measured on an H100 (bench_matmul_kernels
  // sweep_mmvq): one vector takes one row per workgroup on 8B shapes, 64 threads up to 4096 wide
  // (two groups each) and 128 beyond, 5-12% faster than 4 rows of 128 threads, and two rows on
  // 2048-wide ones (1B: Q4_K/Q6_K 6-11% faster). Several vectors share each weight decode over 2
  // rows, with 64 threads up to 8192 wide (against 128: 3-9% faster at 4096, 10% at 8192, 27-31%
  // at 2048, where 128 left half of them idle) and 128 beyond (14336: 128 best). Never more
  // threads than 32-weight groups.
  uint32_t threads = args.cols <= (ncols == 1 ? 4096u : 8192u) ? 64 : 128;
  uint32_t rows_per_group = ncols == 1 ? (args.cols <= 2048 ? 2 : 1) : 2;
  threads = std::max(32u, std::min(threads, std::bit_floor(args.cols / 32)));
  if (tuning_.q8_threads) threads = tuning_.q8_threads;
  if (tuning_.q8_rows) rows_per_group = tuning_.q8_rows;
  if (rope_kv) rows_per_group = 2;  // one pair of rows
  Push push = make_push(args);
  push.x_stride = args.cols;
  push.x_off = static_cast<uint32_t>(uint64_t{args.batch} * args.cols / 8);
  const uint32_t row_groups = div_up(args.rows, rows_per_group);
  const uint32_t gx = std::min(row_groups, caps.max_workgroup_count[0]);
  const Groups groups{gx, div_up(args.batch, ncols), div_up(row_groups, gx)};
  const std::string shader = "matvec_" + type_name + "_q8";
  if (rope_kv) {
    dispatch_rope_kv(pipelines_, rec, args, shader + "_rope_kv", push, *rope_kv, args.xq,
                     {threads, 2, ncols}, groups);
    return;
  }
  const Pipeline& pipeline = pipelines_.get({.shader = shader,
                                             .num_buffers = 3,
                                             .push_constant_bytes = sizeof(Push),
                                             .spec = {threads, rows_per_group, ncols}});
  rec.dispatch(pipeline, {args.weights, args.xq, args.y}, push, groups);
}

bool MatmulKernels::can_read_normalized(TensorType type, uint32_t batch) const {
  return (type == TensorType::F16 || type == TensorType::F32 || type == TensorType::BF16) &&
         batch >= 1 && batch <= kMaxMatvecColumns && !tuning_.shared_reduction;
}

void MatmulKernels::record_matvec(CommandRecorder& rec, const MatmulArgs& args) {
  const KernelType kt = validate("record_matvec", args);
  if (args.xq && int8_dot(args.type) && !args.norm_weight) {
    record_matvec_q8(rec, args, kt.name);
    return;
  }
  record_matvec_float(rec, args, kt.name, kt.unit == 4, nullptr);
}

void MatmulKernels::record_matvec_float(CommandRecorder& rec, const MatmulArgs& args,
                                        const std::string& type_name, bool float_weights,
                                        const RopeKvEpilogue* rope_kv) {
  if (args.norm_weight && !can_read_normalized(args.type, args.batch))
    throw std::invalid_argument(
        "record_matvec: reading x through its RMSNorm needs float weights, at most " +
        std::to_string(kMaxMatvecColumns) + " vectors and subgroup arithmetic");
  const DeviceCapabilities& caps = pipelines_.device().caps();
  const uint32_t ncols = columns_per_pass(args.batch);
  // Defaults measured on an H200 (bench_matmul_kernels, 14336 x 4096): 4 rows per workgroup
  // reuse each activation load 4 times (Q4_K: 31 us vs 47 us with 1 row); the heavier Q3_K/Q6_K
  // decoders and float weights with 8 columns do better with 2.
  const bool heavy_decode = args.type == TensorType::Q6_K || args.type == TensorType::Q3_K;
  uint32_t threads = 128, rows_per_group = 4;
  if (args.type == TensorType::F16 && !caps.is_cpu()) {
    // Llama 8B and 1B shapes on an H100 (bench_matmul_kernels sweep_f16_8b / sweep_matvec_f16,
    // bench/results/HISTORY.md, Nineteenth session): 2 rows a workgroup, threads from the row
    // length. One vector: K / 16 threads (256 from K = 4096): 6144 x 4096 20 us, 28672 x 4096 78
    // us; 8 vectors: K / 32, at least 128 (28672 x 4096 109 us against 150 with the earlier 32
    // threads, the 8B LM head 453 us against 807).
    rows_per_group = 2;
    threads = ncols == 1 ? std::clamp(std::bit_floor(std::max(1u, args.cols / 16)), 64u, 256u)
                         : std::clamp(std::bit_floor(std::max(1u, args.cols / 32)), 128u, 256u);
  } else if (float_weights) {
    // About 256k invocations in flight: on an H100 (bench_matmul_kernels sweep_matvec_f16, 1B
    // F16 shapes) a 2048 x 8192 product read 1539 GB/s with 64 threads a workgroup and 2181 with
    // 256 (8 vectors: 568 -> 1286), while 16384 x 2048 and the 128256-row LM head stay best at
    // 32-64 threads. CPU devices (lavapipe) keep 64 / 32.
    rows_per_group = ncols == 1 ? 4 : 2;
    threads =
        caps.is_cpu()
            ? (ncols == 1 ? 64u : 32u)
            : std::clamp(std::bit_floor(std::max(1u, (1u << 18) * rows_per_group / args.rows)), 32u,
                         256u);
  } else if (heavy_decode) {
    rows_per_group = 2;
  }
  if (tuning_.matvec_threads) threads = tuning_.matvec_threads;
  if (tuning_.matvec_rows) rows_per_group = tuning_.matvec_rows;
  if (rope_kv) rows_per_group = 2;  // one pair of rows
  // 16-byte weight loads for one vector (8B F16 decode 151.7 -> 160.5 tok/s with the rule above);
  // with 8 vectors their registers cost more than they gain (28672 x 4096: 148 us against 109).
  const bool wide = f16_wide_ && args.type == TensorType::F16 && args.cols % 8 == 0 &&
                    !tuning_.shared_reduction && ncols == 1;
  const std::string shader = std::string("matvec_") + (wide ? std::string("f16w") : type_name) +
                             (tuning_.shared_reduction ? "_shmem" : "");
  const uint32_t row_groups = div_up(args.rows, rows_per_group);
  const uint32_t gx = std::min(row_groups, caps.max_workgroup_count[0]);
  const uint32_t gz = div_up(row_groups, gx);
  const uint32_t gy = div_up(args.batch, ncols);
  if (gz > caps.max_workgroup_count[2] || gy > caps.max_workgroup_count[1])
    throw std::invalid_argument("record_matvec: rows=" + std::to_string(args.rows) + " batch=" +
                                std::to_string(args.batch) + " exceed the device's grid");
  if (rope_kv) {
    dispatch_rope_kv(pipelines_, rec, args, shader + "_rope_kv", make_push(args), *rope_kv, args.x,
                     {threads, rows_per_group, ncols}, Groups{gx, gy, gz});
    return;
  }
  if (args.norm_weight) {
    const struct {
      Push base;
      float eps;
    } push{make_push(args), args.norm_eps};
    const Pipeline& pipeline = pipelines_.get({.shader = shader + "_norm_in",
                                               .num_buffers = 4,
                                               .push_constant_bytes = sizeof(push),
                                               .spec = {threads, rows_per_group, ncols}});
    rec.dispatch(pipeline, {args.weights, args.x, args.y, args.norm_weight}, push,
                 Groups{gx, gy, gz});
    return;
  }
  const Pipeline& pipeline = pipelines_.get({.shader = shader,
                                             .num_buffers = 3,
                                             .push_constant_bytes = sizeof(Push),
                                             .spec = {threads, rows_per_group, ncols}});
  rec.dispatch(pipeline, {args.weights, args.x, args.y}, make_push(args), Groups{gx, gy, gz});
}

}  // namespace vkllm::vk
