#include "engine/vulkan/matmul_ops.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>

#include "engine/vulkan/command_recorder.h"
#include "engine/vulkan/coopmat_tile.h"
#include "engine/vulkan/device.h"
#include "engine/vulkan/matmul_detail.h"
#include "engine/vulkan/pipeline.h"
#include "engine/vulkan/weight_layout.h"

namespace vkllm::vk {

using gguf::TensorType;

namespace detail {

std::optional<KernelType> kernel_type(TensorType type) {
  switch (type) {
    case TensorType::F32:
      return KernelType{"f32", 1, 4, 4};
    case TensorType::F16:
      return KernelType{"f16", 1, 2, 4};
    case TensorType::BF16:
      return KernelType{"bf16", 1, 2, 4};
    case TensorType::Q4_0:
      return KernelType{"q4_0", 32, 18, 32};
    case TensorType::Q4_1:
      return KernelType{"q4_1", 32, 20, 32};
    case TensorType::Q5_0:
      return KernelType{"q5_0", 32, 22, 32};
    case TensorType::Q5_1:
      return KernelType{"q5_1", 32, 24, 32};
    case TensorType::Q8_0:
      return KernelType{"q8_0", 32, 34, 32};
    case TensorType::IQ4_NL:
      return KernelType{"iq4_nl", 32, 18, 32};
    case TensorType::Q2_K:
      return KernelType{"q2_k", 256, 84, 32};
    case TensorType::Q3_K:
      return KernelType{"q3_k", 256, 110, 32};
    case TensorType::Q4_K:
      return KernelType{"q4_k", 256, 144, 32};
    case TensorType::Q5_K:
      return KernelType{"q5_k", 256, 176, 32};
    case TensorType::Q6_K:
      return KernelType{"q6_k", 256, 210, 32};
    case TensorType::IQ4_XS:
      return KernelType{"iq4_xs", 256, 136, 32};
    case TensorType::MXFP4:
      return KernelType{"mxfp4", 32, 17, 32};
    default:
      return std::nullopt;
  }
}

std::string type_label(TensorType type) {
  return "weight type " + std::to_string(static_cast<uint32_t>(type));
}

// Checks the arguments against the kernels' rules and returns the type's kernel description.
KernelType validate(const char* op, const MatmulArgs& a) {
  const auto kt = kernel_type(a.type);
  const std::string where = std::string(op) + ": ";
  if (!kt) throw std::invalid_argument(where + "no kernel for " + type_label(a.type));
  if (a.rows == 0 || a.cols == 0 || a.batch == 0)
    throw std::invalid_argument(where + "empty shape rows=" + std::to_string(a.rows) + " cols=" +
                                std::to_string(a.cols) + " batch=" + std::to_string(a.batch));
  const uint32_t k_multiple = std::max(kt->block_elements, 4u);
  if (a.cols % k_multiple)
    throw std::invalid_argument(where + "cols=" + std::to_string(a.cols) +
                                " is not a multiple of " + std::to_string(k_multiple) + " for " +
                                kt->name);
  const uint64_t x_stride = a.x_stride ? a.x_stride : a.cols;
  const uint64_t y_stride = a.y_stride ? a.y_stride : a.rows;
  if (x_stride % 4 || x_stride < a.cols)
    throw std::invalid_argument(where + "x_stride=" + std::to_string(x_stride) +
                                " must be a multiple of 4 and >= cols=" + std::to_string(a.cols));
  if (y_stride < a.rows)
    throw std::invalid_argument(where + "y_stride=" + std::to_string(y_stride) +
                                " is below rows=" + std::to_string(a.rows));
  const uint64_t w_bytes = weight_tensor_bytes(a.type, a.rows, a.cols);
  if (w_bytes + kWeightReadSlackBytes > (uint64_t{1} << 32))
    throw std::invalid_argument(where + "weights of " + std::to_string(w_bytes) +
                                " bytes exceed the kernels' 32-bit byte offsets");
  const uint64_t device_bytes = device_weight_bytes(a.type, w_bytes);
  if (a.weights.size < device_bytes + kWeightReadSlackBytes)
    throw std::invalid_argument(where + "weights slice of " + std::to_string(a.weights.size) +
                                " bytes is smaller than the tensor's " +
                                std::to_string(device_bytes) + " device bytes + " +
                                std::to_string(kWeightReadSlackBytes) + " bytes of read slack");
  const uint64_t x_elems = (a.batch - 1) * x_stride + a.cols;
  const uint64_t y_elems = a.y_offset + (a.batch - 1) * y_stride + a.rows;
  if (x_elems >= (uint64_t{1} << 32) || y_elems >= (uint64_t{1} << 32))
    throw std::invalid_argument(where + "activations exceed 32-bit element indices");
  if (a.x.size < x_elems * sizeof(float))
    throw std::invalid_argument(where + "x slice of " + std::to_string(a.x.size) +
                                " bytes is smaller than the " + std::to_string(x_elems * 4) +
                                " bytes the shape reads");
  if (a.y.size < y_elems * sizeof(float))
    throw std::invalid_argument(where + "y slice of " + std::to_string(a.y.size) +
                                " bytes is smaller than the " + std::to_string(y_elems * 4) +
                                " bytes the shape writes");
  if (a.norm_weight && a.norm_weight.size < uint64_t{a.cols} * sizeof(float))
    throw std::invalid_argument(where + "norm_weight slice of " +
                                std::to_string(a.norm_weight.size) + " bytes holds fewer than " +
                                std::to_string(a.cols) + " floats");
  return *kt;
}

Push make_push(const MatmulArgs& a) {
  return Push{a.rows,
              a.cols,
              a.batch,
              a.x_stride ? a.x_stride : a.cols,
              a.y_stride ? a.y_stride : a.rows,
              0,
              0,
              a.y_offset,
              a.accumulate ? 1u : 0u};
}

}  // namespace detail

using namespace detail;

namespace {

bool has_q8_kernel(TensorType type) {
  switch (type) {
    case TensorType::Q4_0:
    case TensorType::Q8_0:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K:
      return true;
    default:
      return false;
  }
}

// Weight types the tensor-core GEMM decodes: every one whose values f16 holds (F32 and BF16
// weights keep the f32 kernel).
constexpr TensorType kCoopMatTypes[] = {
    TensorType::F16,  TensorType::Q4_0,   TensorType::Q4_1,   TensorType::Q5_0, TensorType::Q5_1,
    TensorType::Q8_0, TensorType::IQ4_NL, TensorType::Q2_K,   TensorType::Q3_K, TensorType::Q4_K,
    TensorType::Q5_K, TensorType::Q6_K,   TensorType::IQ4_XS, TensorType::MXFP4};

bool has_coopmat_kernel(TensorType type) {
  return std::ranges::find(kCoopMatTypes, type) != std::end(kCoopMatTypes);
}

// The tensor-core GEMM's push constants: matmul.comp's, then the split-K layout.
struct CoopPush {
  Push base;
  uint32_t k_split, part_ld, part_stride;
};

}  // namespace

bool has_matmul_kernels(TensorType type) {
  return kernel_type(type).has_value();
}

uint64_t weight_tensor_bytes(TensorType type, uint32_t rows, uint32_t cols) {
  const auto kt = kernel_type(type);
  if (!kt) throw std::invalid_argument("weight_tensor_bytes: no kernel for " + type_label(type));
  return uint64_t{rows} * (cols / kt->block_elements) * kt->block_bytes;
}

MatmulKernels::MatmulKernels(PipelineCache& pipelines, const MatmulTuning& tuning)
    : pipelines_(pipelines), tuning_(tuning) {
  const DeviceCapabilities& caps = pipelines_.device().caps();
  // The subgroup-reduction matvecs exchange sums with subgroupShuffleXor as well. Whatever
  // needs the subgroup reduction asks !shared_reduction, which this settles for the device.
  if (!caps.subgroup_arithmetic() || !caps.subgroup_shuffle()) tuning_.shared_reduction = true;
  f16_wide_ = tuning_.matvec_f16_wide != 0;
  if (tuning_.matvec_threads != 0 && !std::has_single_bit(tuning_.matvec_threads))
    throw std::invalid_argument("MatmulTuning: matvec_threads=" +
                                std::to_string(tuning_.matvec_threads) + " is not a power of two");
  // GPUs: 128 tokens x 64 rows, 8 x 4 per thread: 29 TFLOP/s on an H200 for 4096 x 4096 Q4_K at
  // 512 tokens, against 22 for 64 x 64 tiles; 8 x 8 per thread spills registers there. CPU
  // devices (lavapipe) get 64 x 64 tiles, which their JIT compiles several times faster.
  const bool cpu = caps.is_cpu();
  if (tuning_.tile_tokens == 0) tuning_.tile_tokens = cpu ? 64 : 128;
  if (tuning_.tile_rows == 0) tuning_.tile_rows = 64;
  if (tuning_.thread_tokens == 0) tuning_.thread_tokens = cpu ? 4 : 8;
  if (tuning_.thread_rows == 0) tuning_.thread_rows = 4;
  // The int8-dot kernels reduce with subgroup arithmetic only (every device with an accelerated
  // dot product has it).
  const bool can_int8 = caps.integer_dot_product && !tuning_.shared_reduction;
  int8_dot_enabled_ = tuning_.int8_dot == Int8Dot::On     ? can_int8
                      : tuning_.int8_dot == Int8Dot::Auto ? can_int8 && caps.int8_dot_accelerated
                                                          : false;
  coopmat_enabled_ = tuning_.coopmat == CoopMat::Auto && caps.nv_f16_mma_16();
  if (tuning_.cm_split_per_cu >= 0) {
    split_per_cu_ = split_per_cu_prefill_ = static_cast<uint32_t>(tuning_.cm_split_per_cu);
  } else {
    split_per_cu_ = 8;
    split_per_cu_prefill_ = 4;
  }
  if (tuning_.cm_split_min_slices) split_min_slices_ = tuning_.cm_split_min_slices;
  // f16 activations converted once per product: 5-13% faster GEMMs on an H100, and needed by the
  // batched slice loads (with f32 activations their registers cost more than the batching gains).
  x_f16_enabled_ = tuning_.cm_x_f16 != 0;
  // Weights decoded in f16 arithmetic by the pipelined loads (cm_decode_f16 = 0: in f32, then
  // converted).
  decode_f16_ = tuning_.cm_decode_f16 != 0;
  const uint32_t gm = caps.coopmat2_granularity_m, gn = caps.coopmat2_granularity_n,
                 gk = caps.coopmat2_granularity_k;
  coopmat2_enabled_ = tuning_.coopmat2 == CoopMat::Auto && caps.coopmat2_gemm() &&
                      kCoopMat2Rows % gm == 0 && kCoopMat2NarrowTokens % gn == 0 &&
                      kCoopMat2SliceK % gk == 0;
  cm2_min_tokens_ = tuning_.cm2_min_tokens;
  if (coopmat2_enabled_) {
    // A driver that advertises the matrices but rejects the rewritten module must not fail every
    // prefill: the GEMM's pipelines are built now, and the subgroup-scope GEMM takes over if
    // either fails.
    try {
      for (uint32_t tokens : {kCoopMat2NarrowTokens, kCoopMat2WideTokens}) cm2_gemm(tokens);
    } catch (const std::exception& e) {
      std::fprintf(stderr,
                   "vkllm: workgroup-scope GEMM unavailable (%s); prefill stays on the "
                   "subgroup-scope one\n",
                   e.what());
      coopmat2_enabled_ = false;
    }
  }
  if (coopmat_enabled_) {
    // Every type's tile in every token-count class, so a per-type default cannot go unchecked.
    for (uint32_t batch : {1u, 17u, 33u, 65u})
      for (TensorType type : kCoopMatTypes)
        check_coopmat_tile(coopmat_tile(tuning_, batch, x_f16_enabled_, type), caps);
  }
  if (tuning_.q8_threads != 0 && !std::has_single_bit(tuning_.q8_threads))
    throw std::invalid_argument("MatmulTuning: q8_threads=" + std::to_string(tuning_.q8_threads) +
                                " is not a power of two");
  const MatmulTuning& t = tuning_;
  if (t.tile_tokens % t.thread_tokens || t.tile_rows % t.thread_rows)
    throw std::invalid_argument("MatmulTuning: tile " + std::to_string(t.tile_tokens) + "x" +
                                std::to_string(t.tile_rows) + " is not a multiple of the thread " +
                                "tile " + std::to_string(t.thread_tokens) + "x" +
                                std::to_string(t.thread_rows));
  const uint64_t threads =
      uint64_t{t.tile_tokens / t.thread_tokens} * (t.tile_rows / t.thread_rows);
  if (threads > caps.max_workgroup_invocations || threads > caps.max_workgroup_size[0])
    throw std::invalid_argument("MatmulTuning: " + std::to_string(threads) +
                                " threads per matmul workgroup exceed the device limit");
  const uint64_t shared = 32ull * (t.tile_tokens + 1 + t.tile_rows + 1) * sizeof(float);
  if (shared > caps.max_shared_memory)
    throw std::invalid_argument("MatmulTuning: matmul tiles need " + std::to_string(shared) +
                                " bytes of shared memory, the device has " +
                                std::to_string(caps.max_shared_memory));
}

bool MatmulKernels::coopmat(TensorType type) const {
  return coopmat_enabled_ && has_coopmat_kernel(type);
}

bool MatmulKernels::coopmat2(TensorType type, uint32_t batch) const {
  return coopmat2_enabled_ && has_coopmat_kernel(type) && batch >= cm2_min_tokens(type);
}

bool MatmulKernels::coopmat2(const MatmulArgs& args) const {
  // Rows of 8 halves keep the tensor loads 16-byte aligned; outputs in whole 4-float groups.
  const uint32_t y_stride = args.y_stride ? args.y_stride : args.rows;
  return coopmat2_enabled_ && has_coopmat_kernel(args.type) &&
         args.batch >= cm2_min_tokens(args.type) && args.cols % 8 == 0 && y_stride % 4 == 0 &&
         args.y_offset % 4 == 0;
}

// Splits of K for an output of `tiles` workgroups. A workgroup's walk along K is bound by the
// latency of its slice loads, so at 16..64 tokens, where a 14336-row product has 112 tiles and a
// 4096-row one 32, the GPU idled: on an H100 splitting to ~4 workgroups per SM halved an 8B
// Q4_K_M decode step at 64 sequences (bench/RESULTS.md). With the 64-row decode tiles of four
// subgroups, 8 per SM did better than 4 at 32 sequences (8B Q4_K_M +2-7%; 64: within noise) and
// worse in prefill's small products (8B prefill 512 -3%), which keep 4.
uint32_t MatmulKernels::coopmat_splits(uint32_t tiles, uint32_t cols, uint32_t batch,
                                       uint32_t slice_k) const {
  const uint32_t slices = div_up(cols, slice_k);
  if (tuning_.cm_splits) return std::min(tuning_.cm_splits, slices);
  const DeviceCapabilities& caps = pipelines_.device().caps();
  const uint32_t per_cu = batch > kCoopDecodeTokens ? split_per_cu_prefill_ : split_per_cu_;
  const uint32_t target = per_cu * (caps.compute_units ? caps.compute_units : 16);
  if (uint64_t{tiles} * 2 > target) return 1;
  const uint32_t longest = std::min(slices, div_up(cols, kCoopSplitUnitK) / split_min_slices_);
  return std::max(1u, std::min(div_up(target, tiles), longest));
}

BufferSlice MatmulKernels::RingScratch::next(Device& device, uint64_t bytes) {
  bytes = (bytes + 255) / 256 * 256;
  if (bytes > slot_bytes_) {
    slot_bytes_ = std::max(bytes, uint64_t{1} << 20);
    buffers_.emplace_back(device, slots_ * slot_bytes_, MemoryKind::DeviceLocal, name_);
  }
  turn_ = (turn_ + 1u) % slots_;
  return buffers_.back().slice(turn_ * slot_bytes_, bytes);
}

void MatmulKernels::record_splitk_reduce(CommandRecorder& rec, BufferSlice parts, BufferSlice y,
                                         uint32_t rows, uint32_t batch, uint32_t y_stride,
                                         uint32_t y_off, uint32_t flags, uint32_t splits,
                                         uint32_t part_ld, uint32_t part_stride) {
  const struct {
    uint32_t n_rows, n_cols, y_stride, y_off, flags, splits, part_ld, part_stride;
  } reduce{rows, batch, y_stride, y_off, flags, splits, part_ld, part_stride};
  const Pipeline& sum = pipelines_.get({.shader = "matmul_splitk_reduce",
                                        .num_buffers = 2,
                                        .push_constant_bytes = sizeof(reduce),
                                        .spec = {256}});
  rec.dispatch(sum, {parts, y}, reduce, Groups{div_up(rows, 256), batch, 1});
}

bool MatmulKernels::reads_f16_rows(TensorType type, uint32_t batch) const {
  if (!coopmat(type)) return false;
  return (coopmat2_enabled_ && batch >= cm2_min_tokens(type)) || x_f16_enabled_;
}

uint32_t MatmulKernels::cm2_min_tokens(TensorType type) const {
  return cm2_min_tokens_           ? cm2_min_tokens_
         : type == TensorType::F16 ? kCoopMat2MinTokensF16
                                   : kCoopMat2MinTokens;
}

bool MatmulKernels::can_reduce_norm(uint32_t rows) const {
  return rows % 2 == 0 && pipelines_.device().caps().subgroup_arithmetic();
}

void MatmulKernels::record_reduce_norm(CommandRecorder& rec, const MatmulArgs& args,
                                       const SplitParts& parts, const ReduceNormEpilogue& norm) {
  const uint32_t y_stride = args.y_stride ? args.y_stride : args.rows;
  const uint32_t norm_stride = norm.y_stride ? norm.y_stride : args.rows;
  if (!can_reduce_norm(args.rows) || parts.splits == 0 || norm_stride % 2 || args.batch == 0)
    throw std::invalid_argument("record_reduce_norm: rows=" + std::to_string(args.rows) +
                                " splits=" + std::to_string(parts.splits) +
                                " norm stride=" + std::to_string(norm_stride) +
                                " (needs even rows and stride, partials and subgroup arithmetic)");
  const uint64_t last_y = uint64_t{args.batch - 1} * y_stride + args.y_offset + args.rows;
  const uint64_t last_norm = uint64_t{args.batch - 1} * norm_stride + args.rows;
  if (args.y.size < last_y * 4 || norm.y.size < last_norm * 4 ||
      norm.weight.size < args.rows * 4ull || norm.counters.size < args.batch * 4ull ||
      (norm.f16 && norm.f16.size < uint64_t{args.batch} * args.rows * 2))
    throw std::invalid_argument("record_reduce_norm: a slice is too small for the shape");
  const struct {
    uint32_t n_rows, n_cols, y_stride, y_off, flags, splits, part_ld, part_stride;
    float eps;
    uint32_t norm_stride;
  } push{args.rows,
         args.batch,
         y_stride,
         args.y_offset,
         (args.accumulate ? 1u : 0u) | (norm.f16 ? 2u : 0u),
         parts.splits,
         parts.ld,
         parts.stride,
         norm.eps,
         norm_stride};
  const Pipeline& pipeline = pipelines_.get({.shader = "matmul_splitk_reduce_norm",
                                             .num_buffers = 6,
                                             .push_constant_bytes = sizeof(push),
                                             .spec = {256}});
  rec.dispatch(
      pipeline,
      {parts.parts, args.y, norm.weight, norm.y, norm.f16 ? norm.f16 : norm.y, norm.counters}, push,
      Groups{div_up(args.rows, 256), args.batch, 1});
}

bool MatmulKernels::int8_dot(TensorType type) const {
  return int8_dot_enabled_ && has_q8_kernel(type);
}

void MatmulKernels::record_quantize_q8(CommandRecorder& rec, BufferSlice x, uint32_t cols,
                                       uint32_t batch, uint32_t x_stride, BufferSlice xq) {
  if (x_stride == 0) x_stride = cols;
  if (cols == 0 || cols % 32 || batch == 0 || x_stride % 4 || x_stride < cols)
    throw std::invalid_argument("record_quantize_q8: cols=" + std::to_string(cols) +
                                " must be a positive multiple of 32 and x_stride=" +
                                std::to_string(x_stride) + " a multiple of 4 >= cols");
  if (x.size < ((uint64_t{batch} - 1) * x_stride + cols) * 4)
    throw std::invalid_argument("record_quantize_q8: x slice of " + std::to_string(x.size) +
                                " bytes is too small for the shape");
  if (xq.size < q8_activation_bytes(cols, batch))
    throw std::invalid_argument("record_quantize_q8: xq slice of " + std::to_string(xq.size) +
                                " bytes is below the " +
                                std::to_string(q8_activation_bytes(cols, batch)) + " it needs");
  const DeviceCapabilities& caps = pipelines_.device().caps();
  struct {
    uint32_t k, n_cols, x_stride;
  } push{cols, batch, x_stride};
  const Pipeline& pipeline = pipelines_.get(
      {.shader = "quantize_q8", .num_buffers = 2, .push_constant_bytes = 12, .spec = {64}});
  const uint32_t groups = div_up(uint64_t{batch} * (cols / 32), 64);
  const uint32_t gx = std::min(groups, caps.max_workgroup_count[0]);
  rec.dispatch(pipeline, {x, xq}, push, Groups{gx, div_up(groups, gx), 1});
}

void MatmulKernels::record_to_f16(CommandRecorder& rec, const MatmulArgs& args, uint32_t stride,
                                  BufferSlice out) {
  const DeviceCapabilities& caps = pipelines_.device().caps();
  struct {
    uint32_t k, n_cols, x_stride, x_off, stride;
  } push{args.cols, args.batch, args.x_stride ? args.x_stride : args.cols, 0, stride};
  const Pipeline& pipeline = pipelines_.get(
      {.shader = "to_f16", .num_buffers = 2, .push_constant_bytes = sizeof(push), .spec = {256}});
  const uint32_t groups = div_up(uint64_t{args.batch} * (stride / 8), 256);
  const uint32_t gx = std::min(groups, caps.max_workgroup_count[0]);
  rec.dispatch(pipeline, {args.x, out}, push, Groups{gx, div_up(groups, gx), 1});
}

void MatmulKernels::record_matmul(CommandRecorder& rec, const MatmulArgs& args,
                                  SplitParts* deferred) {
  const KernelType kt = validate("record_matmul", args);
  if (args.norm_weight)
    throw std::invalid_argument("record_matmul: x cannot be read through its RMSNorm here");
  const DeviceCapabilities& caps = pipelines_.device().caps();
  if (deferred) *deferred = {};
  if (coopmat2(args)) {
    record_matmul_cm2(rec, args);
    return;
  }
  if (coopmat(args.type)) {
    const CoopMatTile tile = coopmat_tile(tuning_, args.batch, x_f16_enabled_, args.type);
    const Pipeline& pipeline = pipelines_.get(
        {.shader = std::string("matmul_coopmat_") + kt.name,
         .num_buffers = 4,
         .push_constant_bytes = sizeof(CoopPush),
         .spec = {tile.warps_m * tile.warps_n * caps.subgroup_size, tile.warps_m, tile.warps_n,
                  tile.frags_m, tile.frags_n, tile.batched_loads, x_f16_enabled_ ? 1u : 0u,
                  decode_f16_ ? 1u : 0u, tile.slice_k, tile.stages}});
    const uint32_t gx = div_up(args.rows, tile.rows());
    const uint32_t gy = div_up(args.batch, tile.tokens());
    if (gx > caps.max_workgroup_count[0] || gy > caps.max_workgroup_count[1])
      throw std::invalid_argument("record_matmul: rows=" + std::to_string(args.rows) + " tokens=" +
                                  std::to_string(args.batch) + " exceed the device's grid");
    CoopPush push{make_push(args), 0, 0, 0};
    BufferSlice x = args.x;
    if (x_f16_enabled_) {
      const uint32_t stride = (args.cols + 7) / 8 * 8;
      if (args.x_f16 && args.cols % 8 == 0) {
        if (args.x_f16.size < uint64_t{args.batch} * stride * 2)
          throw std::invalid_argument("record_matmul: x_f16 slice of " +
                                      std::to_string(args.x_f16.size) +
                                      " bytes is too small for the shape");
        x = args.x_f16;
      } else {
        x = x_f16_.next(pipelines_.device(), uint64_t{args.batch} * stride * 2);
        record_to_f16(rec, args, stride, x);
        rec.barrier();
      }
      push.base.x_stride = stride;
    }
    // Whole 16x16 fragments go straight to y when its rows keep the 16-byte alignment the
    // cooperative stores need (the slice offset is at least 16-byte aligned on every device).
    Push& base = push.base;
    if (base.y_stride % 4 == 0 && base.y_off % 4 == 0 && args.y.offset % 16 == 0) base.flags |= 2u;
    const uint32_t want = coopmat_splits(gx * gy, args.cols, args.batch, tile.slice_k);
    if (want <= 1) {
      // Binding 3 (the partials) is unused: y stands in for it.
      rec.dispatch(pipeline, {args.weights, x, args.y, args.y}, push, Groups{gx, gy, 1});
      return;
    }
    const uint32_t slices = div_up(args.cols, tile.slice_k);
    push.k_split = div_up(slices, want) * tile.slice_k;
    const uint32_t splits = div_up(args.cols, push.k_split);
    if (splits > caps.max_workgroup_count[2])
      throw std::invalid_argument("record_matmul: " + std::to_string(splits) +
                                  " K splits exceed the device's grid");
    // Partials padded to whole tiles, so every fragment is stored whole.
    push.part_ld = gx * tile.rows();
    push.part_stride = gy * tile.tokens() * push.part_ld;
    const BufferSlice parts =
        split_parts_.next(pipelines_.device(), uint64_t{splits} * push.part_stride * 4);
    base.flags |= 4u;
    rec.dispatch(pipeline, {args.weights, x, args.y, parts}, push, Groups{gx, gy, splits});
    if (deferred) {
      *deferred = {parts, splits, push.part_ld, push.part_stride};
      return;
    }
    rec.barrier();
    record_splitk_reduce(rec, parts, args.y, args.rows, args.batch, base.y_stride, base.y_off,
                         base.flags & 1u, splits, push.part_ld, push.part_stride);
    return;
  }
  const MatmulTuning& t = tuning_;
  const uint32_t threads = (t.tile_tokens / t.thread_tokens) * (t.tile_rows / t.thread_rows);
  const Pipeline& pipeline = pipelines_.get(
      {.shader = std::string("matmul_") + kt.name,
       .num_buffers = 3,
       .push_constant_bytes = sizeof(Push),
       .spec = {threads, t.tile_tokens, t.tile_rows, t.thread_tokens, t.thread_rows}});
  const uint32_t gx = div_up(args.rows, t.tile_rows);
  const uint32_t gy = div_up(args.batch, t.tile_tokens);
  if (gx > caps.max_workgroup_count[0] || gy > caps.max_workgroup_count[1])
    throw std::invalid_argument("record_matmul: rows=" + std::to_string(args.rows) + " tokens=" +
                                std::to_string(args.batch) + " exceed the device's grid");
  rec.dispatch(pipeline, {args.weights, args.x, args.y}, make_push(args), Groups{gx, gy, 1});
}

}  // namespace vkllm::vk
