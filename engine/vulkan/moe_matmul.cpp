// MatmulKernels' expert products of a mixture-of-experts FFN: record_moe_matmul, the grouped
// products on the tiled GEMMs (shaders/matmul.comp and shaders/matmul_coopmat.comp built with MOE,
// whose row mapping shaders/moe_gemm_rows.glsl describes), and record_moe_matvec, the indirect
// products at decode sizes (shaders/matvec.comp built with MOE_IDS).
#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

#include "engine/vulkan/command_recorder.h"
#include "engine/vulkan/coopmat_tile.h"
#include "engine/vulkan/device.h"
#include "engine/vulkan/matmul_detail.h"
#include "engine/vulkan/matmul_ops.h"
#include "engine/vulkan/moe_ops.h"
#include "engine/vulkan/pipeline.h"
#include "engine/vulkan/weight_layout.h"

namespace vkllm::vk {

using namespace detail;

namespace {

// The kernels' push constants (matmul.comp's, or matmul_coopmat.comp's with the split-K fields)
// followed by the expert stride and the pairs per token.
struct MoeGemmPush {
  Push base;
  uint32_t expert_bytes, n_used;
};
struct MoeCoopGemmPush {
  Push base;
  uint32_t k_split, part_ld, part_stride;
  uint32_t expert_bytes, n_used;
};

constexpr uint32_t kMoeXPerPair = 8;  // flags bit 3 (moe_gemm_rows.glsl)

// The matvec's push constants followed by matvec.comp's MOE_IDS fields.
struct MoeMatvecPush {
  Push base;
  uint32_t expert_bytes, n_used, x_per_pair, combine;
};

void moe_fail(const std::string& what) {
  throw std::invalid_argument("record_moe_matmul: " + what);
}

void moe_matvec_fail(const std::string& what) {
  throw std::invalid_argument("record_moe_matvec: " + what);
}

// What both expert products check first, for a stacked [cols, rows, n_expert] tensor of `type`:
// a kernel for the type, a shape of whole blocks, strides that hold the rows (0: packed), and an
// expert tensor within the kernels' 32-bit byte offsets. Throws std::invalid_argument naming `op`.
struct ExpertShape {
  KernelType kt;
  uint64_t x_stride, y_stride, expert_bytes;
};
ExpertShape check_expert_shape(const char* op, gguf::TensorType type, uint32_t rows, uint32_t cols,
                               uint32_t n_expert, uint32_t x_stride, uint32_t y_stride) {
  auto fail = [op](const std::string& what) {
    throw std::invalid_argument(std::string(op) + ": " + what);
  };
  const auto kt = kernel_type(type);
  if (!kt) fail("no kernel for " + type_label(type));
  if (cols % std::max(kt->block_elements, 4u))
    fail("cols=" + std::to_string(cols) + " is not a multiple of the block");
  const ExpertShape e{*kt, x_stride ? x_stride : cols, y_stride ? y_stride : rows,
                      weight_tensor_bytes(type, rows, cols)};
  if (e.x_stride % 4 || e.x_stride < cols || e.y_stride < rows) fail("bad x or y stride");
  if (e.expert_bytes * n_expert + kWeightReadSlackBytes > (uint64_t{1} << 32))
    fail("expert tensor past the kernels' 32-bit byte offsets");
  return e;
}

}  // namespace

void MatmulKernels::record_moe_matmul(CommandRecorder& rec, const MoeMatmulArgs& a) {
  if (a.rows == 0 || a.cols == 0 || a.n_used == 0 || a.n_expert == 0 ||
      a.n_expert > ops::kMoeMaxExperts)
    moe_fail("empty shape or " + std::to_string(a.n_expert) + " experts (1 to 256)");
  const ExpertShape shape = check_expert_shape("record_moe_matmul", a.type, a.rows, a.cols,
                                               a.n_expert, a.x_stride, a.y_stride);
  if (a.n_tokens == 0) return;
  const KernelType& kt = shape.kt;
  const uint64_t x_stride = shape.x_stride, y_stride = shape.y_stride;
  const uint64_t expert_bytes = shape.expert_bytes;
  const uint64_t w_bytes = expert_bytes * a.n_expert;
  if (a.weights.size < device_weight_bytes(a.type, w_bytes) + kWeightReadSlackBytes)
    moe_fail("weights slice of " + std::to_string(a.weights.size) + " bytes is too small");
  const uint64_t pairs = uint64_t{a.n_tokens} * a.n_used;
  const uint64_t x_rows = a.x_per_pair ? pairs : a.n_tokens;
  if ((x_rows - 1) * x_stride + a.cols >= (uint64_t{1} << 32) ||
      (pairs - 1) * y_stride + a.rows >= (uint64_t{1} << 32))
    moe_fail("activations exceed 32-bit element indices");
  if (a.x.size < ((x_rows - 1) * x_stride + a.cols) * 4 ||
      a.y.size < ((pairs - 1) * y_stride + a.rows) * 4 ||
      a.groups.size < ops::moe_group_words(pairs) * 4)
    moe_fail("x, y or groups slice is smaller than the shape");

  if (a.matvec) {
    record_moe_grouped_matvec(rec, a, kt.name, kt.unit, x_stride, y_stride, expert_bytes);
    return;
  }
  if (moe_cm2(a)) {
    record_moe_matmul_cm2(rec, a, kt.name, x_stride, y_stride);
    return;
  }
  const DeviceCapabilities& caps = pipelines_.device().caps();
  const Push base{
      a.rows, a.cols, a.n_tokens, static_cast<uint32_t>(x_stride), static_cast<uint32_t>(y_stride),
      0,      0,      0,          a.x_per_pair ? kMoeXPerPair : 0u};
  // An expert holds at most n_tokens pairs (a token selects it once): the grid's worst case.
  auto grid = [&](uint32_t tile_rows, uint32_t tile_tokens) {
    const Groups g{div_up(a.rows, tile_rows), div_up(a.n_tokens, tile_tokens), a.n_expert};
    if (g.x > caps.max_workgroup_count[0] || g.y > caps.max_workgroup_count[1] ||
        g.z > caps.max_workgroup_count[2])
      moe_fail("rows=" + std::to_string(a.rows) + " tokens=" + std::to_string(a.n_tokens) +
               " exceed the device's grid");
    return g;
  };
  if (coopmat(a.type)) {
    // Tiles for the pairs an expert gets on average: narrow ones when they are few.
    const auto per_expert = static_cast<uint32_t>(div_up(pairs, a.n_expert));
    const CoopMatTile tile = coopmat_tile(tuning_, per_expert, x_f16_enabled_, a.type);
    const Pipeline& pipeline = pipelines_.get(
        {.shader = std::string("matmul_coopmat_moe_") + kt.name,
         .num_buffers = 5,
         .push_constant_bytes = sizeof(MoeCoopGemmPush),
         .spec = {tile.warps_m * tile.warps_n * caps.subgroup_size, tile.warps_m, tile.warps_n,
                  tile.frags_m, tile.frags_n, tile.batched_loads, x_f16_enabled_ ? 1u : 0u,
                  decode_f16_ ? 1u : 0u, tile.slice_k, tile.stages}});
    MoeCoopGemmPush push{base, 0, 0, 0, static_cast<uint32_t>(expert_bytes), a.n_used};
    // As record_matmul: the activations as f16 rows once (x's rows, not the gathered pairs),
    // which the kernel's pipelined slice loads need.
    BufferSlice x = a.x;
    if (x_f16_enabled_) {
      MatmulArgs rows;
      rows.x = a.x;
      rows.cols = a.cols;
      rows.batch = static_cast<uint32_t>(x_rows);
      rows.x_stride = static_cast<uint32_t>(x_stride);
      const uint32_t stride = (a.cols + 7) / 8 * 8;
      x = x_f16_.next(pipelines_.device(), x_rows * stride * 2);
      record_to_f16(rec, rows, stride, x);
      rec.barrier();
      push.base.x_stride = stride;
    }
    // Binding 3 (split-K partials) is unused: y stands in for it.
    rec.dispatch(pipeline, {a.weights, x, a.y, a.y, a.groups}, push,
                 grid(tile.rows(), tile.tokens()));
    return;
  }
  const MatmulTuning& t = tuning_;
  const uint32_t threads = (t.tile_tokens / t.thread_tokens) * (t.tile_rows / t.thread_rows);
  const Pipeline& pipeline = pipelines_.get(
      {.shader = std::string("matmul_moe_") + kt.name,
       .num_buffers = 5,
       .push_constant_bytes = sizeof(MoeGemmPush),
       .spec = {threads, t.tile_tokens, t.tile_rows, t.thread_tokens, t.thread_rows}});
  const MoeGemmPush push{base, static_cast<uint32_t>(expert_bytes), a.n_used};
  // Binding 3 is unused by this kernel: y stands in for it.
  rec.dispatch(pipeline, {a.weights, a.x, a.y, a.y, a.groups}, push,
               grid(t.tile_rows, t.tile_tokens));
}

// The decode-sized rule for a matvec workgroup (as record_moe_matvec's below): 4 rows (2 for the
// heavier Q3_K / Q6_K decoders), threads up to 128 (lavapipe 64) but no more than a row has
// decode units.
namespace {
struct MatvecShape {
  uint32_t threads, rows_per_group;
};
MatvecShape moe_matvec_shape(const MatmulTuning& tuning, const DeviceCapabilities& caps,
                             gguf::TensorType type, uint32_t units) {
  const bool heavy_decode = type == gguf::TensorType::Q6_K || type == gguf::TensorType::Q3_K;
  MatvecShape s{std::clamp(std::bit_floor(units), 32u, caps.is_cpu() ? 64u : 128u),
                heavy_decode ? 2u : 4u};
  if (tuning.matvec_threads) s.threads = tuning.matvec_threads;
  if (tuning.matvec_rows) s.rows_per_group = tuning.matvec_rows;
  return s;
}
}  // namespace

void MatmulKernels::record_moe_grouped_matvec(CommandRecorder& rec, const MoeMatmulArgs& a,
                                              const std::string& type_name, uint32_t unit,
                                              uint64_t x_stride, uint64_t y_stride,
                                              uint64_t expert_bytes) {
  const DeviceCapabilities& caps = pipelines_.device().caps();
  const MatvecShape shape = moe_matvec_shape(tuning_, caps, a.type, a.cols / unit);
  const uint32_t row_groups = div_up(a.rows, shape.rows_per_group);
  const uint32_t gx = std::min(row_groups, caps.max_workgroup_count[0]);
  const Groups groups{gx, a.n_expert, div_up(row_groups, gx)};
  if (groups.y > caps.max_workgroup_count[1] || groups.z > caps.max_workgroup_count[2])
    moe_fail("rows=" + std::to_string(a.rows) + " experts=" + std::to_string(a.n_expert) +
             " exceed the device's grid");
  // n_cols is unused (each workgroup reads its expert's count), combine is 0.
  const MoeMatvecPush push{{a.rows, a.cols, a.n_tokens * a.n_used, static_cast<uint32_t>(x_stride),
                            static_cast<uint32_t>(y_stride), 0, 0, 0, 0},
                           static_cast<uint32_t>(expert_bytes),
                           a.n_used,
                           a.x_per_pair ? 1u : 0u,
                           0u};
  const Pipeline& pipeline = pipelines_.get(
      {.shader = "matvec_" + type_name + "_moeg" + (tuning_.shared_reduction ? "_shmem" : ""),
       .num_buffers = 5,
       .push_constant_bytes = sizeof(push),
       .spec = {shape.threads, shape.rows_per_group, kMaxMatvecColumns}});
  // Binding 4 (the router weights of MOE_IDS) is unused: groups stands in for it.
  rec.dispatch(pipeline, {a.weights, a.x, a.y, a.groups, a.groups}, push, groups);
}

void MatmulKernels::record_moe_matvec(CommandRecorder& rec, const MoeMatvecArgs& a) {
  if (!ops::moe_matvec_supports(a.type))
    moe_matvec_fail("no expert kernel for " + type_label(a.type));
  if (a.rows == 0 || a.cols == 0 || a.n_used == 0 || a.n_expert == 0)
    moe_matvec_fail("empty shape");
  const ExpertShape shape = check_expert_shape("record_moe_matvec", a.type, a.rows, a.cols,
                                               a.n_expert, a.x_stride, a.y_stride);
  if (a.n_items == 0) return;
  const KernelType& kt = shape.kt;
  const uint64_t x_stride = shape.x_stride, y_stride = shape.y_stride;
  const uint64_t expert_bytes = shape.expert_bytes;
  // x rows: a pair's or a token's; y rows: a pair's, or a token's under combine.
  const uint64_t x_rows = a.combine || a.x_per_pair
                              ? uint64_t{a.n_items} * (a.combine ? a.n_used : 1)
                              : div_up(uint64_t{a.n_items}, a.n_used);
  const uint64_t pairs = a.combine ? uint64_t{a.n_items} * a.n_used : a.n_items;
  if (a.x.size < ((x_rows - 1) * x_stride + a.cols) * 4 ||
      a.y.size < ((uint64_t{a.n_items} - 1) * y_stride + a.rows) * 4 || a.ids.size < pairs * 4 ||
      (a.combine && a.weights.size < pairs * 4))
    moe_matvec_fail("x, y, ids or weights slice is smaller than the shape");

  const DeviceCapabilities& caps = pipelines_.device().caps();
  const bool q8 = a.xq && int8_dot(a.type);
  if (q8 && a.xq.size < q8_activation_bytes(a.cols, static_cast<uint32_t>(x_rows)))
    moe_matvec_fail("xq slice is smaller than the q8 rows of x");
  // As record_matvec_float's quantized defaults (moe_matvec_shape); a combine's n_used products
  // are one flat range of decode units. On q8 rows as record_matvec_q8's for one vector: a
  // 32-weight group per thread and step, 2 rows a workgroup, up to 64 threads.
  const uint32_t passes = a.combine ? a.n_used : 1;
  MatvecShape mv = moe_matvec_shape(tuning_, caps, a.type, a.cols / kt.unit * passes);
  if (q8) {
    mv = {std::clamp(std::bit_floor(a.cols / 32 * passes), 32u, 64u), 2u};
    if (tuning_.q8_threads) mv.threads = tuning_.q8_threads;
    if (tuning_.q8_rows) mv.rows_per_group = tuning_.q8_rows;
  }
  const uint32_t threads = mv.threads, rows_per_group = mv.rows_per_group;
  const uint32_t row_groups = div_up(a.rows, rows_per_group);
  const uint32_t gx = std::min(row_groups, caps.max_workgroup_count[0]);
  const Groups groups{gx, a.n_items, div_up(row_groups, gx)};
  if (groups.y > caps.max_workgroup_count[1] || groups.z > caps.max_workgroup_count[2])
    moe_matvec_fail("rows=" + std::to_string(a.rows) + " items=" + std::to_string(a.n_items) +
                    " exceed the device's grid");
  // q8 rows: x_off is where the (dx, sx) pairs start, in pairs (record_matvec_q8's).
  const auto x_off = q8 ? static_cast<uint32_t>(x_rows * a.cols / 8) : 0u;
  const MoeMatvecPush push{{a.rows, a.cols, a.n_items, static_cast<uint32_t>(x_stride),
                            static_cast<uint32_t>(y_stride), 0, x_off, 0, a.combine ? 1u : 0u},
                           static_cast<uint32_t>(expert_bytes),
                           a.n_used,
                           a.x_per_pair ? 1u : 0u,
                           a.combine ? 1u : 0u};
  const std::string shader = std::string("matvec_") + kt.name +
                             (q8                         ? "_q8_moe"
                              : tuning_.shared_reduction ? "_moe_shmem"
                                                         : "_moe");
  const Pipeline& pipeline = pipelines_.get({.shader = shader,
                                             .num_buffers = 5,
                                             .push_constant_bytes = sizeof(push),
                                             .spec = {threads, rows_per_group, 1u}});
  rec.dispatch(pipeline, {a.w, q8 ? a.xq : a.x, a.y, a.ids, a.weights}, push, groups);
}

}  // namespace vkllm::vk
