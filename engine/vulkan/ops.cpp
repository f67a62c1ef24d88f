#include "engine/vulkan/ops.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <span>
#include <stdexcept>
#include <string>

#include "engine/vulkan/command_recorder.h"
#include "engine/vulkan/device.h"
#include "engine/vulkan/op_checks.h"
#include "engine/vulkan/pipeline.h"

namespace vkllm::vk::ops {
namespace {

// Splits a 1-D workgroup count over x and y (maxComputeWorkGroupCount[0] is only 65535 on some
// devices); kernels recombine x + y * num_groups.x and drop the excess.
Groups groups_1d(uint32_t n) {
  if (n <= 65535) return {n, 1, 1};
  return {65535, div_up(n, 65535), 1};
}

const Pipeline& pipeline(PipelineCache& pc, const char* shader, uint32_t buffers,
                         uint32_t push_bytes, uint32_t workgroup) {
  return pc.get({.shader = shader,
                 .num_buffers = buffers,
                 .push_constant_bytes = push_bytes,
                 .spec = {workgroup}});
}

constexpr std::array kGetRowsTypes = {"f32",  "f16",    "bf16",   "q4_0", "q4_1", "q5_0",
                                      "q5_1", "q8_0",   "q2_k",   "q3_k", "q4_k", "q5_k",
                                      "q6_k", "iq4_nl", "iq4_xs", "mxfp4"};

}  // namespace

bool get_rows_supports(std::string_view type) {
  const std::string t = lower_ascii(type);
  return std::find(kGetRowsTypes.begin(), kGetRowsTypes.end(), t) != kGetRowsTypes.end();
}

void get_rows(CommandRecorder& rec, PipelineCache& pc, const GetRowsArgs& a) {
  const std::string t = lower_ascii(a.type);
  require_arg(get_rows_supports(t),
              "get_rows: unsupported weight type \"" + std::string(a.type) + "\"");
  const bool plain = t == "f32" || t == "f16" || t == "bf16";
  const uint32_t block =
      plain ? 4
      : (t == "q2_k" || t == "q3_k" || t == "q4_k" || t == "q5_k" || t == "q6_k" || t == "iq4_xs")
          ? 256
          : 32;
  require_arg(a.row_elems % block == 0 && a.row_elems > 0,
              "get_rows: row length " + std::to_string(a.row_elems) + " is not a multiple of " +
                  std::to_string(block));
  constexpr uint32_t unit = 4;  // the smallest decode unit; the kernel drops surplus invocations
  struct {
    uint32_t k, row_bytes, n_rows, n_tokens, w_off, ids_off, out_off, out_stride;
    float scale;
    uint32_t first_row, part;
  } push{a.row_elems,
         a.row_bytes,
         a.n_rows,
         a.n_tokens,
         0,
         0,
         0,
         a.out_stride ? a.out_stride : a.row_elems,
         a.scale,
         a.first_row,
         a.part ? 1u : 0u};
  constexpr uint32_t wg = 64;
  const Pipeline& p = pipeline(pc, ("get_rows_" + t).c_str(), 3, sizeof(push), wg);
  rec.dispatch(p, {a.weights, a.ids, a.out}, push, {div_up(a.row_elems / unit, wg), a.n_tokens, 1});
}

namespace {
// Rows of up to 512 blocks of 32 (the subgroup reduction's bound at subgroup size 8) fit the
// register-blocked kernel: one block per invocation, held in registers.
constexpr uint32_t kMaxNormBlocks = 512;

bool fits_norm_blocks(uint32_t n) {
  return n % 32 == 0 && n / 32 <= kMaxNormBlocks;
}
}  // namespace

bool rms_norm_writes_f16(uint32_t n, const DeviceCapabilities& caps) {
  return caps.subgroup_arithmetic() && fits_norm_blocks(n);
}

bool rms_norm_fuses_gate(uint32_t n, uint32_t gate_off, uint32_t gate_stride,
                         const DeviceCapabilities& caps) {
  return caps.subgroup_arithmetic() && fits_norm_blocks(n) && gate_off % 4 == 0 &&
         gate_stride % 4 == 0;
}

void rms_norm(CommandRecorder& rec, PipelineCache& pc, const RmsNormArgs& a) {
  require_arg(a.n > 0, "rms_norm: empty rows");
  struct {
    uint32_t n, n_rows, x_stride, y_stride;
    float eps;
    uint32_t flags;
    uint32_t g_off, g_stride, g_group;
  } push{a.n,
         a.n_rows,
         a.x_stride ? a.x_stride : a.n,
         a.y_stride ? a.y_stride : a.n,
         a.eps,
         (a.residual ? 1u : 0u) | (a.weight ? 0u : 2u) | (a.gate ? 4u : 0u) |
             (a.post_add ? 8u : 0u) | (a.scale ? 16u : 0u),
         a.gate_off,
         a.gate_stride,
         std::max(a.gate_group, 1u)};
  const bool sg = pc.device().caps().subgroup_arithmetic();
  if (a.post_add)
    require_arg(!a.residual && !a.gate && (!a.f16 || a.next_y) &&
                    rms_norm_fuses_gate(a.n, 0, 0, pc.device().caps()) && push.x_stride % 4 == 0 &&
                    push.y_stride % 4 == 0,
                "rms_norm: a post-add needs no residual, gate or f16 output (but of a chained "
                "norm), subgroup arithmetic, "
                "n a multiple of 32 of at most 16384 and strides multiples of 4");
  if (a.gate)
    require_arg(!a.residual && !a.f16 &&
                    rms_norm_fuses_gate(a.n, a.gate_off, a.gate_stride, pc.device().caps()) &&
                    push.x_stride % 4 == 0 && push.y_stride % 4 == 0,
                "rms_norm: a fused gate needs no residual or f16 output, subgroup arithmetic, n "
                "a multiple of 32 of at most 16384 and offsets and strides multiples of 4");
  if (a.q8) {
    require_arg(
        sg && a.n % 32 == 0 && (a.y_stride == 0 || a.y_stride == a.n),
        "rms_norm: a q8 output needs subgroup arithmetic, n a multiple of 32 and dense rows");
    require_arg(a.q8.size >= uint64_t{a.n_rows} * a.n * 5 / 4, "rms_norm: q8 slice too small");
  }
  // The register-blocked kernel also needs vec4-aligned rows.
  const bool blocks_fit = fits_norm_blocks(a.n) && push.x_stride % 4 == 0 && push.y_stride % 4 == 0;
  if (a.f16) {
    require_arg(
        !a.q8 && rms_norm_writes_f16(a.n, pc.device().caps()) && blocks_fit,
        "rms_norm: an f16 output needs subgroup arithmetic, no q8 output, n a multiple of 32 "
        "of at most 16384 and strides multiples of 4");
    require_arg(a.f16.size >= uint64_t{a.n_rows} * a.n * 2, "rms_norm: f16 slice too small");
  }
  if (a.next_y)
    require_arg(a.post_add && a.weight && a.next_weight && blocks_fit &&
                    (a.y_stride == 0 || a.y_stride == a.n),
                "rms_norm: a chained norm needs a post-add, both weights, n a multiple of 32 of "
                "at most 16384 and dense rows");
  // Bindings 0-3 in every variant, 4 the q8 or f16 copy, 5-7 the chained norm's weight, output
  // and scale.
  const std::array<BufferSlice, 8> buffers{a.x,
                                           a.residual   ? a.residual
                                           : a.gate     ? a.gate
                                           : a.post_add ? a.post_add
                                                        : a.x,
                                           a.weight ? a.weight : a.x,
                                           a.y,
                                           a.q8    ? a.q8
                                           : a.f16 ? a.f16
                                                   : a.x,
                                           a.next_weight,
                                           a.next_y,
                                           a.scale ? a.scale : a.x};
  const uint32_t n_buffers = a.next_y ? 8 : a.q8 || a.f16 ? 5 : 4;
  if (blocks_fit) {
    uint32_t wg = 32;
    while (wg < a.n / 32) wg *= 2;
    const char* shader = a.next_y ? (a.q8    ? "rms_norm_blocks_chain_q8"
                                     : a.f16 ? "rms_norm_blocks_chain_f16"
                                             : "rms_norm_blocks_chain")
                         : a.q8   ? "rms_norm_blocks_q8"
                         : a.f16  ? "rms_norm_blocks_f16"
                         : sg     ? "rms_norm_blocks"
                                  : "rms_norm_blocks_shmem";
    const Pipeline& p = pipeline(pc, shader, n_buffers, sizeof(push), wg);
    rec.dispatch(p, std::span(buffers.data(), n_buffers), std::as_bytes(std::span(&push, 1)),
                 groups_1d(a.n_rows));
    return;
  }
  // Enough threads for 4+ elements each, within 64..512.
  uint32_t wg = 64;
  while (wg < 512 && wg * 4 < a.n) wg *= 2;
  const char* shader = a.q8 ? "rms_norm_q8" : sg ? "rms_norm" : "rms_norm_shmem";
  const Pipeline& p = pipeline(pc, shader, n_buffers, sizeof(push), wg);
  rec.dispatch(p, std::span(buffers.data(), n_buffers), std::as_bytes(std::span(&push, 1)),
               groups_1d(a.n_rows));
}

void layer_norm(CommandRecorder& rec, PipelineCache& pc, const LayerNormArgs& a) {
  require_arg(a.n > 0, "layer_norm: empty rows");
  struct {
    uint32_t n, n_rows;
    float eps;
  } push{a.n, a.n_rows, a.eps};
  const bool sg = pc.device().caps().subgroup_arithmetic();
  uint32_t wg = 64;
  while (wg < 512 && wg * 4 < a.n) wg *= 2;
  const Pipeline& p = pipeline(pc, sg ? "layer_norm" : "layer_norm_shmem", 4, sizeof(push), wg);
  rec.dispatch(p, {a.x, a.weight, a.bias, a.y}, push, groups_1d(a.n_rows));
}

void pool_rows(CommandRecorder& rec, PipelineCache& pc, PoolMode mode, const BatchInfo& b,
               BufferSlice x, uint32_t n, BufferSlice out) {
  require_arg(n > 0 && b.n_seqs > 0, "pool_rows: empty input");
  struct {
    uint32_t n, n_tokens, n_seqs, mode;
  } push{n, b.n_tokens, b.n_seqs, static_cast<uint32_t>(mode)};
  constexpr uint32_t wg = 64;
  const Pipeline& p = pipeline(pc, "pool_rows", 3, sizeof(push), wg);
  rec.dispatch(p, {x, b.meta, out}, push, {div_up(n, wg), b.n_seqs, 1});
}

void short_conv(CommandRecorder& rec, PipelineCache& pc, const BatchInfo& b,
                const ShortConvArgs& a) {
  require_arg(a.n_embd > 0 && b.n_seqs > 0, "short_conv: empty input");
  require_arg(a.l_cache >= 2 && a.l_cache <= 8, "short_conv: kernel length outside 2..8");
  constexpr uint32_t kShortConvTokens = 16;  // short_conv.comp's TOKENS
  struct {
    uint32_t n_embd, l_cache, n_tokens, n_seqs, bcx_stride, out_stride, slot_floats, layer_offset,
        phase;
  } push{a.n_embd,
         a.l_cache,
         b.n_tokens,
         b.n_seqs,
         a.bcx_stride ? a.bcx_stride : 3 * a.n_embd,
         a.out_stride ? a.out_stride : a.n_embd,
         a.slot_floats,
         a.layer_offset,
         0};
  constexpr uint32_t wg = 64;
  const uint32_t blocks =
      div_up(std::max(1u, a.max_q_len ? a.max_q_len : b.n_tokens), kShortConvTokens);
  const Groups groups{div_up(a.n_embd, wg), b.n_seqs, blocks};
  const Pipeline& plain = pipeline(pc, "short_conv", 5, sizeof(push), wg);
  const std::array<BufferSlice, 6> buffers{a.bcx, b.meta, a.taps, a.states, a.out, a.q8};
  const auto push_bytes = [&] { return std::as_bytes(std::span(&push, 1)); };
  if (a.q8) {
    require_arg(a.n_embd % 32 == 0, "short_conv: a q8 output needs n_embd a multiple of 32");
    require_arg(a.q8.size >= uint64_t{b.n_tokens} * a.n_embd * 5 / 4,
                "short_conv: q8 slice too small");
    rec.dispatch(pipeline(pc, "short_conv_q8", 6, sizeof(push), wg), buffers, push_bytes(), groups);
  } else {
    rec.dispatch(plain, std::span(buffers.data(), 5), push_bytes(), groups);
  }
  if (blocks > 1) {  // block 0 read the old state: the new one is written after it
    rec.barrier();
    push.phase = 1;
    rec.dispatch(plain, std::span(buffers.data(), 5), push_bytes(), {groups.x, groups.y, 1});
  }
}

namespace {
void elementwise(CommandRecorder& rec, PipelineCache& pc, uint32_t op, BufferSlice a, BufferSlice b,
                 BufferSlice out, uint32_t n, float s, float t = 0.f) {
  struct {
    uint32_t n, op;
    float s;
    uint32_t a_off, b_off, out_off;
    float t;
  } push{n, op, s, 0, 0, 0, t};
  constexpr uint32_t wg = 256;
  const Pipeline& p = pipeline(pc, "elementwise", 3, sizeof(push), wg);
  rec.dispatch(p, {a, b, out}, push, groups_1d(div_up(n, wg * 4)));
}
}  // namespace

void add(CommandRecorder& rec, PipelineCache& pc, BufferSlice a, BufferSlice b, BufferSlice out,
         uint32_t n) {
  elementwise(rec, pc, 0, a, b, out, n, 0.f);
}
void mul(CommandRecorder& rec, PipelineCache& pc, BufferSlice a, BufferSlice b, BufferSlice out,
         uint32_t n) {
  elementwise(rec, pc, 1, a, b, out, n, 0.f);
}
void scale(CommandRecorder& rec, PipelineCache& pc, BufferSlice a, BufferSlice out, uint32_t n,
           float s) {
  elementwise(rec, pc, 2, a, a, out, n, s);
}
void softcap(CommandRecorder& rec, PipelineCache& pc, BufferSlice a, BufferSlice out, uint32_t n,
             float cap) {
  require_arg(cap > 0.f, "softcap: cap must be positive");
  elementwise(rec, pc, 3, a, a, out, n, cap);
}

void add_bias(CommandRecorder& rec, PipelineCache& pc, BufferSlice x, BufferSlice bias, uint32_t n,
              uint32_t n_rows) {
  require_arg(n_rows <= 65535, "add_bias: more than 65535 rows");
  struct {
    uint32_t n, n_rows, stride, off;
  } push{n, n_rows, n, 0};
  constexpr uint32_t wg = 64;
  const Pipeline& p = pipeline(pc, "add_bias", 2, sizeof(push), wg);
  rec.dispatch(p, {x, bias}, push, {div_up(n, wg), n_rows, 1});
}

void rope_2d(CommandRecorder& rec, PipelineCache& pc, const Rope2dArgs& a) {
  require_arg(a.head_dim % 4 == 0 && a.head_dim > 0, "rope_2d: head_dim must be a multiple of 4");
  require_arg(a.n_tokens <= 65535, "rope_2d: more than 65535 tokens");
  struct {
    uint32_t n_tokens, n_head, head_dim, stride;
    float theta;
    uint32_t halves;
  } push{a.n_tokens, a.n_head,          a.head_dim, a.stride ? a.stride : a.n_head * a.head_dim,
         a.theta,    a.halves ? 1u : 0u};
  constexpr uint32_t wg = 64;
  const Pipeline& p = pipeline(pc, "rope_2d", 2, sizeof(push), wg);
  rec.dispatch(p, {a.x, a.pos}, push, {div_up(a.n_head * a.head_dim / 2, wg), a.n_tokens, 1});
}

void gelu(CommandRecorder& rec, PipelineCache& pc, BufferSlice a, BufferSlice out, uint32_t n) {
  elementwise(rec, pc, 4, a, a, out, n, 0.f);
}
void tanh(CommandRecorder& rec, PipelineCache& pc, BufferSlice a, BufferSlice out, uint32_t n,
          float in_scale) {
  elementwise(rec, pc, 5, a, a, out, n, in_scale);
}
void clamp(CommandRecorder& rec, PipelineCache& pc, BufferSlice a, BufferSlice out, uint32_t n,
           float lo, float hi) {
  elementwise(rec, pc, 6, a, a, out, n, lo, hi);
}

void glu(CommandRecorder& rec, PipelineCache& pc, const GluArgs& a) {
  struct {
    uint32_t n, n_rows, act, gate_off, gate_stride, up_off, up_stride, out_off, out_stride, splits,
        split_stride;
  } push{a.n,
         a.n_rows,
         static_cast<uint32_t>(a.act),
         a.gate_off,
         a.gate_stride ? a.gate_stride : a.n,
         a.up_off,
         a.up_stride ? a.up_stride : a.n,
         0,
         a.out_stride ? a.out_stride : a.n,
         std::max(a.splits, 1u),
         a.split_stride};
  constexpr uint32_t wg = 256;
  Groups g{div_up(a.n, wg), std::min<uint32_t>(a.n_rows, 65535), div_up(a.n_rows, 65535)};
  if (a.q8) {
    require_arg(!a.f16, "glu: a q8 and an f16 output at once");
    require_arg(a.n % 32 == 0, "glu: a q8 output needs n a multiple of 32");
    require_arg(a.q8.size >= uint64_t{a.n_rows} * a.n * 5 / 4, "glu: q8 slice too small");
    rec.dispatch(pipeline(pc, "glu_q8", 4, sizeof(push), wg), {a.gate, a.up, a.out, a.q8}, push, g);
    return;
  }
  if (a.f16) {
    require_arg(a.n % 2 == 0, "glu: an f16 output needs n even");
    require_arg(a.f16.size >= uint64_t{a.n_rows} * a.n * 2, "glu: f16 slice too small");
    rec.dispatch(pipeline(pc, "glu_f16", 4, sizeof(push), wg), {a.gate, a.up, a.out, a.f16}, push,
                 g);
    return;
  }
  const Pipeline& p = pipeline(pc, "glu", 3, sizeof(push), wg);
  rec.dispatch(p, {a.gate, a.up, a.out}, push, g);
}

namespace {
struct RopePush {
  uint32_t head_dim, n_dims, n_heads, n_tokens, n_seqs, src_off, src_stride, dst_off, dst_stride;
  float freq_base, freq_scale;
  uint32_t flags, cache_heads, block_size, src_splits, src_split_stride;
  float temp_scale;
  uint32_t temp_floor, temp_offset;
  uint32_t sections[4];  // M-RoPE (flags bit 3; bit 4: interleaved)
  float norm_eps;        // flags bit 5: the head norm (bit 6: with a weight)
};

RopePush rope_push(const RopeParams* r, const BatchInfo& b, const HeadRows& src, uint32_t head_dim,
                   uint32_t n_heads, const HeadNorm* norm) {
  RopePush p{};
  if (norm) {
    p.flags |= 32u | (norm->weight ? 64u : 0u);
    p.norm_eps = norm->eps;
  }
  p.head_dim = head_dim;
  p.n_dims = r && r->n_dims ? r->n_dims : head_dim;
  p.n_heads = n_heads;
  p.n_tokens = b.n_tokens;
  p.n_seqs = b.n_seqs;
  p.src_off = src.off;
  p.src_stride = src.stride ? src.stride : n_heads * head_dim;
  p.src_splits = std::max(src.splits, 1u);
  p.src_split_stride = src.split_stride;
  p.freq_base = r ? r->freq_base : 0.f;
  p.freq_scale = r ? r->freq_scale : 0.f;
  p.flags |= r ? (r->neox ? 1u : 0u) | (r->freq_factors ? 2u : 0u) | (r->rotate ? 0u : 4u) : 0u;
  p.temp_scale = r && r->temp_floor > 0 ? r->temp_scale : 0.f;
  p.temp_floor = r ? r->temp_floor : 0u;
  p.temp_offset = r ? r->temp_offset : 0u;
  if (r && r->mrope_pos) {
    const auto& s = r->mrope_sections;
    if (s[0] + s[1] + s[2] + s[3] > 0) p.flags |= r->mrope_interleaved ? 24u : 8u;
    for (int i = 0; i < 4; ++i) p.sections[i] = s[i];
  }
  require_arg(head_dim > 0 && head_dim % 2 == 0 && head_dim <= 512,
              "rope: head_dim " + std::to_string(head_dim) + " must be even and at most 512");
  require_arg(p.n_dims % 2 == 0 && p.n_dims <= head_dim,
              "rope: n_dims " + std::to_string(p.n_dims) + " must be even and <= head_dim");
  return p;
}
}  // namespace

void rope(CommandRecorder& rec, PipelineCache& pc, const RopeParams& r, const BatchInfo& b,
          const HeadRows& src, const HeadRows& dst, uint32_t n_heads, const HeadNorm* norm) {
  RopePush push = rope_push(&r, b, src, r.head_dim, n_heads, norm);
  push.dst_off = dst.off;
  push.dst_stride = dst.stride ? dst.stride : n_heads * r.head_dim;
  const Pipeline& p = pipeline(pc, "rope", 6, sizeof(push), 64);
  rec.dispatch(p,
               {src.data, dst.data, b.meta, r.freq_factors ? r.freq_factors : b.meta,
                r.mrope_pos ? r.mrope_pos : b.meta, norm && norm->weight ? norm->weight : b.meta},
               push, {n_heads, b.n_tokens, 1});
}

void write_kv(CommandRecorder& rec, PipelineCache& pc, const RopeParams* r, const BatchInfo& b,
              const HeadRows& src, uint32_t head_dim, const CacheRegion& cache,
              const HeadNorm* norm) {
  RopePush push = rope_push(r, b, src, head_dim, cache.n_kv_heads, norm);
  push.cache_heads = cache.n_kv_heads;
  push.block_size = cache.block_size;
  require_arg(cache.block_size > 0, "write_kv: block size must be positive");
  require_arg(kv::cache_type_fits(cache.type, head_dim),
              "write_kv: a " + std::string(kv::cache_type_name(cache.type)) +
                  " cache needs head_dim a multiple of 32, not " + std::to_string(head_dim));
  const Pipeline& p = pc.get({.shader = r ? "rope_kv" : "kv_copy",
                              .num_buffers = 6,
                              .push_constant_bytes = sizeof(push),
                              .spec = {64, static_cast<uint32_t>(cache.type)}});
  BufferSlice factors = r && r->freq_factors ? r->freq_factors : b.meta;
  BufferSlice mrope = r && r->mrope_pos ? r->mrope_pos : b.meta;
  BufferSlice norm_w = norm && norm->weight ? norm->weight : b.meta;
  rec.dispatch(p, {src.data, cache.data, b.meta, factors, mrope, norm_w}, push,
               {cache.n_kv_heads, b.n_tokens, 1});
}

uint64_t argmax_scratch_bytes(uint32_t n, uint32_t n_rows) {
  return n > kArgmaxChunk ? uint64_t(div_up(n, kArgmaxChunk)) * n_rows * 8 : 0;
}

void argmax(CommandRecorder& rec, PipelineCache& pc, BufferSlice logits, BufferSlice out,
            uint32_t n, uint32_t n_rows, uint32_t stride, BufferSlice scratch) {
  struct {
    uint32_t n, n_rows, stride, stage, chunk, n_chunks;
  } push{n, n_rows, stride ? stride : n, 2, kArgmaxChunk, div_up(n, kArgmaxChunk)};
  constexpr uint32_t wg = 256;
  const Pipeline& p = pipeline(pc, "argmax", 3, sizeof(push), wg);
  const uint64_t need = argmax_scratch_bytes(n, n_rows);
  if (need == 0 || !scratch) {  // small rows, or no scratch given: one workgroup per row
    rec.dispatch(p, {logits, out, out}, push, {n_rows, 1, 1});
    return;
  }
  require_arg(scratch.size >= need, "argmax: rows of " + std::to_string(n) + " need " +
                                        std::to_string(need) + " bytes of scratch, got " +
                                        std::to_string(scratch.size));
  push.stage = 0;
  rec.dispatch(p, {logits, out, scratch}, push, {push.n_chunks, n_rows, 1});
  rec.barrier();
  push.stage = 1;
  rec.dispatch(p, {logits, out, scratch}, push, {n_rows, 1, 1});
}

}  // namespace vkllm::vk::ops
