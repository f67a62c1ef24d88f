// MatmulKernels::record_matmul_cm2: the workgroup-scope tensor-core GEMM (shaders/matmul_cm2.comp)
// with its two preparations, the activations as f16 rows and, for weights other than f16, the
// weights decoded to f16 rows (shaders/dequant_f16.comp) a chunk of rows at a time.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/vulkan/command_recorder.h"
#include "engine/vulkan/device.h"
#include "engine/vulkan/matmul_detail.h"
#include "engine/vulkan/matmul_ops.h"
#include "engine/vulkan/pipeline.h"

namespace vkllm::vk {

using gguf::TensorType;
using namespace detail;

namespace {

// Decoded weights per chunk; the scratch holds two (it alternates halves), 256 MiB in all. On an
// H100, 8B prefill (its 235 MiB gate|up in two chunks, its 117 MiB down in one, the second
// chunk's decode overlapping the first's GEMM): Q4_K_M 9758-9795 tok/s at 128 MiB against
// 8988-9079 at 64, 8028 at 32, 9478-9498 at 256 and more (--tune coopmat2_chunk_mb); with 64-wide
// K slices 11560 against 10685 at 64 and 11316 at 256.
constexpr uint64_t kChunkBytes = uint64_t{128} << 20;

struct Cm2Push {
  uint32_t rows, cols, batch, x_stride, y_stride, y_off, flags, w_rows, x_rows, k_split,
      part_stride;
};

// Workgroups a product should reach: with its 128 x 128 tiles a 2048-row product at 512 tokens
// has 64, half of an H100's compute units, and walks K 8192 deep for the 1B down projection.
// Splitting K so that the grid covered the GPU once took the 1B F16 prefill layer's down phase
// from 0.236 to 0.130 ms (twice: 8B Q4_K_M prefill 512 12148-12402 -> 11546-11607 tok/s, 1B F16
// 64047-64136 -> 63241-63502). Two of these workgroups run on a compute unit at once, so a grid
// short of one per unit is split into as many parts as fit two per unit without a second wave:
// on an H100 (bench_matmul_kernels sweep_prefill_f16, 512 tokens, 64 tiles) 2048 x 8192 took
// 78.8 us in 4 splits against 89.9 in 3 (one per unit, rounded up), 2048 x 2048 34.1 against
// 34.8; products of 96-128 tiles keep their 2.
constexpr uint32_t kPrefillSplitSlotsPerCu = 2;
// Batched decode (up to the narrow token tile) is bound by the weights' bytes, and its few
// workgroups by their loads' latency: K is split so that the grid comes nearest to two workgroups
// per compute unit. On an H100 (bench_matmul_kernels sweep_f16_gemm, 8 tokens), 4096 x 14336 took
// 58.8 us in 8 splits against 69.4 in 1 and 71.6 in 4, 4096 x 4096 24.2 in 8 against 28.2, while
// 28672 x 4096 (224 tiles) is best whole: 101.6 us against 107.7 in 2. 8B F16 at 32 sequences:
// 3058-3139 -> 3307-3335 tok/s.
constexpr uint32_t kDecodeSplitTargetPerCu = 2;
// Fewest K elements a split walks (two unrolled steps): shorter ones spend more on the
// partials than they gain.
constexpr uint32_t kMinSplitK = 512;

// matmul_cm2.comp's push constants with MOE's first expert.
struct Cm2MoePush {
  Cm2Push base;
  uint32_t moe_e0;
};

uint32_t round_up(uint32_t n, uint32_t m) {
  return (n + m - 1) / m * m;
}

}  // namespace

void MatmulKernels::record_matmul_cm2(CommandRecorder& rec, const MatmulArgs& args) {
  const KernelType kt = validate("record_matmul", args);
  const DeviceCapabilities& caps = pipelines_.device().caps();
  const uint32_t tokens =
      args.batch <= kCoopMat2NarrowTokens ? kCoopMat2NarrowTokens : kCoopMat2WideTokens;
  const uint32_t gy = div_up(args.batch, tokens);
  if (div_up(args.rows, kCoopMat2Rows) > caps.max_workgroup_count[0] ||
      gy > caps.max_workgroup_count[1])
    throw std::invalid_argument("record_matmul: rows=" + std::to_string(args.rows) + " tokens=" +
                                std::to_string(args.batch) + " exceed the device's grid");
  // Activations as f16 rows, padded to whole token tiles so that every tile but the last row
  // tile loads unchecked (the padding rows hold stale values, which reach only outputs that are
  // never stored: each output column reads its own token's row). Rows the norm or activation
  // before wrote need no conversion (8B F16 prefill: one dispatch and barrier fewer for three of
  // a layer's four products); their slice may end before the padding, and the last token tile
  // then loads checked.
  const uint32_t x_stride = args.cols;
  const uint64_t row_bytes_f16 = uint64_t{x_stride} * 2;
  const uint64_t readable = std::min<uint64_t>(args.x_f16.size, caps.max_storage_buffer_range);
  const bool given = args.x_f16 && readable >= args.batch * row_bytes_f16;
  const uint32_t x_rows = given ? static_cast<uint32_t>(std::min<uint64_t>(
                                      round_up(args.batch, tokens), readable / row_bytes_f16))
                                : round_up(args.batch, tokens);
  const BufferSlice x = given ? args.x_f16.sub(0, x_rows * row_bytes_f16)
                              : x_f16_.next(pipelines_.device(), x_rows * row_bytes_f16);
  if (!given) record_to_f16(rec, args, x_stride, x);
  const Pipeline& gemm = cm2_gemm(tokens);
  Cm2Push push{args.rows,
               args.cols,
               args.batch,
               x_stride,
               args.y_stride ? args.y_stride : args.rows,
               args.y_offset,
               args.accumulate ? 1u : 0u,
               args.rows,
               x_rows,
               0,
               0};
  // One GEMM over weights `w` (rows row0.. of the product, w_rows of them readable), split
  // along K where the grid is small; recorded after a barrier that its inputs need.
  auto multiply = [&](BufferSlice w, uint32_t row0, uint32_t n, uint32_t w_rows) {
    const uint32_t gx = div_up(n, kCoopMat2Rows);
    const uint32_t splits = cm2_splits(gx * gy, args.cols, args.batch);
    push.rows = n;
    push.w_rows = w_rows;
    if (splits <= 1) {
      push.y_off = args.y_offset + row0;
      rec.dispatch(gemm, {w, x, args.y}, push, Groups{gx, gy, 1});
      return;
    }
    // Partials in whole 4-float groups, as the tile stores want.
    const uint32_t part_ld = round_up(n, 4);
    Cm2Push split = push;
    split.k_split = round_up(div_up(args.cols, splits), 256);
    const uint32_t used = div_up(args.cols, split.k_split);
    split.y_stride = part_ld;
    split.y_off = 0;
    split.flags = 0;
    split.part_stride = args.batch * part_ld;
    const BufferSlice parts =
        split_parts_.next(pipelines_.device(), uint64_t{used} * split.part_stride * 4);
    rec.dispatch(gemm, {w, x, parts}, split, Groups{gx, gy, used});
    rec.barrier();
    record_splitk_reduce(rec, parts, args.y, n, args.batch, push.y_stride, args.y_offset + row0,
                         push.flags, used, part_ld, split.part_stride);
  };
  if (args.type == TensorType::F16) {
    if (!given) rec.barrier();
    multiply(args.weights, 0, args.rows, args.rows);
    return;
  }
  const uint64_t row_bytes = uint64_t{args.cols} * 2;
  const uint32_t chunk_rows =
      tuning_.cm2_chunk_rows ? round_up(tuning_.cm2_chunk_rows, kCoopMat2Rows)
                             : std::max<uint32_t>(kCoopMat2Rows, cm2_chunk_bytes() / row_bytes /
                                                                     kCoopMat2Rows * kCoopMat2Rows);
  for (uint32_t row0 = 0; row0 < args.rows; row0 += chunk_rows) {
    const uint32_t n = std::min(chunk_rows, args.rows - row0);
    // Whole row tiles: the padding rows are read (stale) but never stored.
    const uint32_t padded = round_up(n, kCoopMat2Rows);
    const BufferSlice w = w_f16_.next(pipelines_.device(), padded * row_bytes);
    record_decode_f16(rec, kt.name, args.weights, w, n, args.cols, row0);
    // Orders this chunk's decode (and, the first time, the activations) before its GEMM, and the
    // GEMM two chunks back before this decode overwrites its half of the scratch.
    rec.barrier();
    multiply(w, row0, n, padded);
  }
}

bool MatmulKernels::moe_cm2(const MoeMatmulArgs& a) const {
  // Only where experts get many pairs: every expert's weights are decoded to f16 (written and
  // read back, 4 bytes a weight) whatever its pairs, which the faster GEMM repays from about 64
  // pairs an expert. On an H200 at 512 tokens (4-layer real-width fixtures, gate+up / down ms a
  // layer, subgroup-scope GEMM -> this): gpt-oss-20b (64 pairs an expert) 1.79 / 0.79 -> 1.33 /
  // 0.57, Qwen3-30B-A3B (32) 0.87 / 0.34 -> 0.99 / 0.39.
  constexpr uint64_t kMinPairsPerExpert = 64;
  // Rows of 8 halves for the tensor loads, output rows of whole vec4s for the scatter.
  return coopmat2(a.type, ~0u) && a.cols % 8 == 0 && a.rows % 4 == 0 &&
         uint64_t{a.n_tokens} * a.n_used >= kMinPairsPerExpert * a.n_expert;
}

void MatmulKernels::record_moe_matmul_cm2(CommandRecorder& rec, const MoeMatmulArgs& a,
                                          const std::string& type_name, uint64_t x_stride,
                                          uint64_t y_stride) {
  Device& device = pipelines_.device();
  const DeviceCapabilities& caps = device.caps();
  const uint32_t pairs = a.n_tokens * a.n_used;
  const uint32_t tokens = kCoopMat2NarrowTokens;  // the token tile: experts get tens of pairs
  if (div_up(a.rows, kCoopMat2Rows) > caps.max_workgroup_count[0] ||
      div_up(a.n_tokens, tokens) > caps.max_workgroup_count[1] ||
      a.n_expert > caps.max_workgroup_count[2])
    throw std::invalid_argument("record_moe_matmul: rows=" + std::to_string(a.rows) + " tokens=" +
                                std::to_string(a.n_tokens) + " exceed the device's grid");
  // Rows grid: positions in expert order, split over y and z.
  const Groups rows_grid{0, std::min(pairs, 65535u), div_up(pairs, 65535)};
  constexpr uint32_t kRowsWg = 64;
  struct {
    uint32_t cols, n_pairs, stride, n_used;
  } gather{a.cols, pairs, static_cast<uint32_t>(x_stride), a.x_per_pair ? 0u : a.n_used};
  // x in expert order as f16 rows, and a token tile of padding the unchecked loads may read.
  const uint32_t x_rows = pairs + tokens;
  const BufferSlice xs = x_f16_.next(device, uint64_t{x_rows} * a.cols * 2);
  rec.dispatch(pipelines_.get({.shader = "moe_sorted_rows_gather",
                               .num_buffers = 3,
                               .push_constant_bytes = sizeof(gather),
                               .spec = {kRowsWg}}),
               {a.groups, a.x, xs}, gather,
               Groups{div_up(a.cols / 4, kRowsWg), rows_grid.y, rows_grid.z});
  const BufferSlice ys = moe_rows_.next(device, uint64_t{pairs} * a.rows * 4);

  // Whole experts decoded per chunk, as record_matmul_cm2's chunks (alternating halves of the
  // scratch, each chunk's decode overlapping the GEMM before it), padded by a row tile.
  const Pipeline& gemm =
      pipelines_.get({.shader = "matmul_cm2_moe",
                      .num_buffers = 4,
                      .push_constant_bytes = sizeof(Cm2MoePush),
                      .spec = {kCoopMat2Invocations, kCoopMat2Rows, tokens, kCoopMat2SliceK}});
  if (a.type == TensorType::F16) {
    // Read in place, every expert in one grid (a tile past an expert's rows reads the next one's
    // or, for the last, loads checked).
    rec.barrier();  // x gathered
    const uint32_t n = a.n_expert * a.rows;
    const Cm2MoePush push{{a.rows, a.cols, pairs, a.cols, a.rows, 0, 0, n, x_rows, 0, 0}, 0};
    rec.dispatch(gemm, {a.weights, xs, ys, a.groups}, push,
                 Groups{div_up(a.rows, kCoopMat2Rows), div_up(a.n_tokens, tokens), a.n_expert});
  }
  const uint64_t expert_f16 = uint64_t{a.rows} * a.cols * 2;
  const auto per_chunk = static_cast<uint32_t>(
      std::clamp<uint64_t>(cm2_chunk_bytes() / expert_f16, 1, std::min(a.n_expert, 65535u)));
  for (uint32_t e0 = 0; a.type != TensorType::F16 && e0 < a.n_expert; e0 += per_chunk) {
    const uint32_t n_e = std::min(per_chunk, a.n_expert - e0);
    const uint32_t n = n_e * a.rows;
    const uint32_t padded = n + kCoopMat2Rows;
    const BufferSlice w = w_f16_.next(device, uint64_t{padded} * a.cols * 2);
    record_decode_f16(rec, type_name, a.weights, w, n, a.cols, e0 * a.rows);
    rec.barrier();  // this chunk decoded, x gathered; the GEMM two chunks back done with w
    const Cm2MoePush push{{a.rows, a.cols, pairs, a.cols, a.rows, 0, 0, padded, x_rows, 0, 0}, e0};
    rec.dispatch(gemm, {w, xs, ys, a.groups}, push,
                 Groups{div_up(a.rows, kCoopMat2Rows), div_up(a.n_tokens, tokens), n_e});
  }
  rec.barrier();
  struct {
    uint32_t cols, n_pairs, stride, unused;
  } scatter{a.rows, pairs, static_cast<uint32_t>(y_stride), 0};
  rec.dispatch(pipelines_.get({.shader = "moe_sorted_rows_scatter",
                               .num_buffers = 3,
                               .push_constant_bytes = sizeof(scatter),
                               .spec = {kRowsWg}}),
               {a.groups, ys, a.y}, scatter,
               Groups{div_up(a.rows / 4, kRowsWg), rows_grid.y, rows_grid.z});
}

uint64_t MatmulKernels::cm2_chunk_bytes() const {
  // Smaller chunks on GPUs of little memory (under 16 GiB), never under 16 MiB.
  return tuning_.cm2_chunk_mb
             ? uint64_t{tuning_.cm2_chunk_mb} << 20
             : std::clamp<uint64_t>(pipelines_.device().caps().device_local_bytes / 128,
                                    uint64_t{16} << 20, kChunkBytes);
}

void MatmulKernels::record_decode_f16(CommandRecorder& rec, const std::string& type_name,
                                      BufferSlice weights, BufferSlice out, uint32_t n_rows,
                                      uint32_t cols, uint32_t row0) {
  const Pipeline& decode = pipelines_.get({.shader = "dequant_f16_" + type_name,
                                           .num_buffers = 2,
                                           .push_constant_bytes = 12,
                                           .spec = {256}});
  struct {
    uint32_t n_rows, k, row0;
  } dq{n_rows, cols, row0};
  constexpr uint32_t kUnit = 8;  // weights per decode invocation (UNIT of the block formats)
  const uint32_t groups = div_up(uint64_t{n_rows} * (cols / kUnit), 256);
  const uint32_t gx = std::min(groups, pipelines_.device().caps().max_workgroup_count[0]);
  rec.dispatch(decode, {weights, out}, dq, Groups{gx, div_up(groups, gx), 1});
}

const Pipeline& MatmulKernels::cm2_gemm(uint32_t tokens) {
  return pipelines_.get({.shader = "matmul_cm2",
                         .num_buffers = 3,
                         .push_constant_bytes = sizeof(Cm2Push),
                         .spec = {kCoopMat2Invocations, kCoopMat2Rows, tokens, kCoopMat2SliceK}});
}

uint32_t MatmulKernels::cm2_splits(uint32_t tiles, uint32_t cols, uint32_t batch) const {
  if (tuning_.cm_splits) return tuning_.cm_splits;
  const DeviceCapabilities& caps = pipelines_.device().caps();
  const uint32_t units = caps.compute_units ? caps.compute_units : 16;
  if (batch <= kCoopMat2NarrowTokens) {
    const uint32_t target = kDecodeSplitTargetPerCu * units;
    const uint32_t nearest = (target + tiles / 2) / tiles;
    return std::max(1u, std::min(nearest, cols / kMinSplitK));
  }
  if (tiles >= units) return 1;
  return std::max(1u, std::min(kPrefillSplitSlotsPerCu * units / tiles, cols / kMinSplitK));
}

}  // namespace vkllm::vk
