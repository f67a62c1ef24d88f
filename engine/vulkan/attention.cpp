#include "engine/vulkan/attention.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "engine/vulkan/command_recorder.h"
#include "engine/vulkan/device.h"
#include "engine/vulkan/pipeline.h"

namespace vkllm::vk::ops {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("attention: " + what);
}

uint32_t shared_bytes(uint32_t rows, uint32_t bq, uint32_t bc, uint32_t d) {
  return 4 * (rows * d + 2 * bc * (d / 2 + 1) + rows * bc + 3 * rows + bq) + 64;
}

// (token, head) rows of a tensor-core workgroup: four subgroups of 16.
constexpr uint32_t kCoopMatRows = 64;

// The head dim attention_coopmat.comp computes with for heads of d: the next multiple of 16.
uint32_t coopmat_head_dim(uint32_t d) {
  return (d + 15) / 16 * 16;
}

// attention_coopmat.comp's shared arrays at head dim d (its HS, Ssh, Psh, Msh/Lsh and Pos with
// ROWS = 64, BC = 32): heads of 256 take 47.6 KiB, just inside NVIDIA's 48.
uint64_t coopmat_shared_bytes(uint32_t d) {
  const uint64_t rows = kCoopMatRows, bc = 32;
  return rows * (d / 4 + 2) * 8 + rows * (bc + 4) * 4 + rows * (bc / 4 + 2) * 8 + 2 * rows * 4 +
         rows * 4;
}

// attention_decode.comp's shared memory for chunks of `p` positions and `wg` invocations: Q rows,
// the chunk's V rows (padded), scores, softmax state; 0 where its output sums would not fit the V
// rows' space they reuse.
uint32_t decode_shared_bytes(uint32_t p, uint32_t wg, uint32_t r, uint32_t d) {
  const uint32_t hd2 = d / 2, ns = wg >= hd2 ? wg / hd2 : 1;
  if (2 * r * ns * hd2 > p * (hd2 + 1)) return 0;
  return 4 * (r * d + p * (hd2 + 1) + r * p + 3 * r) + 64;
}

struct DecodeShape {
  uint32_t positions = 0, tpp = 1;  // positions 0: the tiled kernel instead
  uint32_t head_groups = 1;         // workgroups per KV head
};

// The chunked kernel's workgroups per KV head: the largest divisor of the GQA ratio `r` that keeps
// the grid within one workgroup per compute unit. On an H100 (bench/results/HISTORY.md,
// Twenty-first session) one sequence of an 8B model (8 KV heads, 4 query heads each) at 128 / 512
// positions: 9.2 -> 7.9 / 26.4 -> 21.4 us; batch-1 decode GPU time a step 8B Q4_K_M 3.51-3.54 ->
// 3.47 ms, Q8_0 4.29-4.30 -> 4.20-4.24, F16 6.30-6.31 -> 6.23; 8 sequences 0.6-0.9% faster; 1B
// even.
uint32_t decode_head_groups(const AttentionArgs& a, uint32_t r, uint32_t units, uint32_t forced) {
  if (a.head_groups) {
    require(r % a.head_groups == 0, "head_groups " + std::to_string(a.head_groups) +
                                        " does not divide the GQA ratio " + std::to_string(r));
    return a.head_groups;
  }
  if (forced && r % forced == 0) return forced;
  const uint64_t groups = uint64_t{a.batch.n_tokens} * a.k_cache.n_kv_heads * a.n_splits;
  uint32_t best = 1;
  for (uint32_t g = 1; g <= r; ++g)
    if (r % g == 0 && groups * g <= units) best = g;
  return best;
}

// Whether a step runs as decode does (attention.h, kDecodeMaxQueryTokens): one query token per
// sequence, or a few within kDecodeMaxContext positions.
bool runs_as_decode(const AttentionArgs& a) {
  return a.max_q_len <= 1 ||
         (a.max_q_len <= kDecodeMaxQueryTokens && a.max_kv_len <= kDecodeMaxContext);
}

// attention_decode.comp's shape for a decode step, or none (the tiled kernel). Auto takes it for
// unsplit steps whose grid leaves compute units idle (at most two workgroups per unit); where
// the grid fills the device the tiled kernel's leaner per-position work won on an H100 (8B
// Q4_K_M at 64 sequences 4509-4529 against 4443-4457 tok/s), and split steps (long contexts) ran
// faster on it with 64-position splits than here with a chunk per split (8B Q4_K_M after 4096
// positions: 3.91-3.95 against 4.08-4.10 ms a step). GQA ratios above 16 never run here (their
// scores and sums outgrow registers and shared memory). A chunk is 128 positions where its
// shared memory fits, else 64, two invocations a position (1B Q4_K_M at batch 1: 1.109-1.118 ms a
// step against 1.122-1.126 with one and 1.121-1.124 with four).
DecodeShape decode_shape(const AttentionArgs& a, uint32_t r, const Device& device) {
  const DeviceCapabilities& caps = device.caps();
  const uint32_t groups = a.batch.n_tokens * a.k_cache.n_kv_heads;
  const uint32_t units = caps.compute_units ? caps.compute_units : 16;
  if (!runs_as_decode(a) || a.decode_kernel == DecodeKernel::Tiled || r > 16 ||
      (a.decode_kernel == DecodeKernel::Auto && (a.n_splits > 1 || groups > 2 * units)))
    return {};
  const uint32_t d = a.head_dim;
  if (d > 256) return {};  // its V rows and output sums outgrow shared memory
  const uint32_t hg = decode_head_groups(a, r, units, device.tuning().attn_head_groups);
  for (uint32_t positions : {128u, 64u}) {
    uint32_t tpp = std::min(2u, std::max(1u, caps.subgroup_size));
    while (tpp > 1 &&
           positions * tpp > std::min(caps.max_workgroup_size[0], caps.max_workgroup_invocations))
      tpp /= 2;
    const uint32_t wg = positions * tpp;
    const uint32_t bytes = decode_shared_bytes(positions, wg, r / hg, d);
    if (bytes && bytes <= caps.max_shared_memory && positions >= r / hg &&
        wg <= caps.max_workgroup_size[0] && wg <= caps.max_workgroup_invocations)
      return {positions, tpp, hg};
  }
  return {};
}

}  // namespace

std::string attention_unsupported(uint32_t head_dim, uint32_t gqa, const DeviceCapabilities& caps) {
  const std::string what =
      "GQA ratio " + std::to_string(gqa) + " with heads of " + std::to_string(head_dim);
  if (head_dim == 0 || head_dim % 4 != 0 || head_dim > kAttentionMaxHeadDim)
    return "heads of " + std::to_string(head_dim) + " (a multiple of 4 up to " +
           std::to_string(kAttentionMaxHeadDim) + " is supported)";
  if (gqa == 0 || gqa > 128) return what + ": at most 128 query heads per KV head";
  const uint32_t bytes = shared_bytes(gqa, 1, 8, head_dim);
  if (bytes > caps.max_shared_memory)
    return what + " needs " + std::to_string(bytes) + " bytes of shared memory; the device has " +
           std::to_string(caps.max_shared_memory);
  return {};
}

bool attention_on_tensor_cores(const AttentionArgs& a, const DeviceCapabilities& caps) {
  const uint32_t n_kv = a.k_cache.n_kv_heads;
  if (!a.tensor_cores || !caps.nv_f16_mma_16() || caps.subgroup_size != 32 ||
      !caps.subgroup_shuffle() || !caps.subgroup_vote())
    return false;
  // Steps of a few tokens per sequence (a speculative step's drafts) stay on the f32 kernels that
  // decode runs where the context allows: f16 queries and probabilities would give their rows
  // other logits than decoding the same tokens one by one (greedy speculation's output would
  // change at near-ties).
  if (a.max_q_len < 8 || runs_as_decode(a) || n_kv == 0 || a.n_q_heads % n_kv != 0) return false;
  const uint32_t r = a.n_q_heads / n_kv;
  const uint32_t d = a.head_dim, padded = coopmat_head_dim(d);
  const uint32_t q_stride = a.q.stride ? a.q.stride : a.n_q_heads * d;
  // Heads padded to the next multiple of 16 (SigLIP's and Qwen3-VL's 72 as 80): f16 caches,
  // unsplit (the split partials and their reduction are laid out by the real head dim).
  const bool pad_ok = padded == d || (a.k_cache.type == kv::CacheType::F16 && a.n_splits == 1);
  return d % 8 == 0 && padded <= 256 && pad_ok &&
         coopmat_shared_bytes(padded) <= caps.max_shared_memory && kCoopMatRows % r == 0 &&
         a.q.off % 4 == 0 && q_stride % 4 == 0;
}

uint64_t attention_scratch_bytes(uint32_t n_splits, uint32_t n_tokens, uint32_t n_q_heads,
                                 uint32_t head_dim) {
  return uint64_t(n_splits) * n_tokens * n_q_heads * (head_dim + 2) * sizeof(float);
}

uint32_t attention_suggested_splits(uint32_t max_kv_len, uint32_t n_tokens, uint32_t n_kv_heads,
                                    uint32_t compute_units, uint32_t split_target,
                                    uint32_t head_dim) {
  // Enough workgroups to keep every compute unit reading (a workgroup walks its KV slice serially,
  // one tile's load latency after another), but not so many that the partials' reduction costs
  // more than it saves: on an H100, 8B decode at 16k/32k of context was fastest aiming at 4
  // workgroups per SM (attention 47/79 us per layer, against 52/85 at 8 and 57 at 16). Splits of
  // at least 64 positions (two tiles) keep the partials small next to the KV they summarise.
  // Up to 256 positions, one workgroup reads them on the chunked kernel in one or two round trips,
  // less than the reduction's own pass costs (on an H100, 1B Q4_K_M at batch 1 and 16-144
  // positions: 806-818 tok/s splitting from 128 positions, 813-855 not).
  const bool tiled_only = head_dim > 256;
  const uint32_t min_positions = tiled_only ? 16 : 64;
  if (max_kv_len <= (tiled_only ? 16u : 256u)) return 1;
  const uint32_t groups = std::max(1u, n_tokens * n_kv_heads);
  const uint32_t want = std::max(1u, split_target * compute_units / groups);
  return std::clamp(std::min(want, max_kv_len / min_positions), 1u, kAttentionMaxSplits);
}

uint32_t attention_prefill_splits(uint32_t max_kv_len, uint32_t max_q_len, uint32_t n_seqs,
                                  uint32_t n_kv_heads, uint32_t gqa, uint32_t compute_units,
                                  uint32_t split_target) {
  // The tensor-core kernel's tile where the GQA ratio divides it, else the scalar kernel's ~16
  // rows (16 / gqa tokens; attention() picks the same).
  const uint32_t tokens_per_group =
      gqa && kCoopMatRows % gqa == 0 ? kCoopMatRows / gqa : std::max(1u, 16 / gqa);
  const uint32_t groups = std::max(1u, div_up(max_q_len, tokens_per_group) * n_seqs * n_kv_heads);
  // Four times decode's target: a prefill workgroup is four subgroups, so several fit an SM. On
  // an H100, 8B prefill 512 after 32k: 1759 tok/s unsplit, 1590 / 1973 / 2071 at 2 / 4 / 8 splits.
  const uint32_t want = std::max(1u, 4 * split_target * compute_units / groups);
  return std::clamp(std::min(want, max_kv_len / 1024), 1u, kAttentionMaxSplits);
}

void attention(CommandRecorder& rec, PipelineCache& pc, const AttentionArgs& a) {
  const uint32_t d = a.head_dim;
  const uint32_t n_kv = a.k_cache.n_kv_heads;
  require(d > 0 && d % 4 == 0 && d <= kAttentionMaxHeadDim,
          "head_dim " + std::to_string(d) + " unsupported");
  require(n_kv > 0 && a.n_q_heads % n_kv == 0, std::to_string(a.n_q_heads) +
                                                   " query heads are not a multiple of " +
                                                   std::to_string(n_kv) + " KV heads");
  require(a.v_cache.n_kv_heads == n_kv && a.v_cache.block_size == a.k_cache.block_size &&
              a.v_cache.type == a.k_cache.type,
          "K and V cache regions disagree");
  const auto kv_type = static_cast<uint32_t>(a.k_cache.type);
  require(kv::cache_type_fits(a.k_cache.type, d),
          "a " + std::string(kv::cache_type_name(a.k_cache.type)) +
              " KV cache needs head_dim a multiple of 32, not " + std::to_string(d));
  require(a.n_splits >= 1 && a.n_splits <= kAttentionMaxSplits,
          "n_splits " + std::to_string(a.n_splits) + " outside 1.." +
              std::to_string(kAttentionMaxSplits));
  const uint32_t r = a.n_q_heads / n_kv;
  const auto& caps = pc.device().caps();

  const bool q8_here = a.n_splits == 1 && attention_writes_q8(a);
  const bool f16 = attention_writes_f16(a, caps);
  const bool f16_here = a.n_splits == 1 && f16;
  struct {
    uint32_t n_tokens, n_seqs, n_q_heads, n_kv_heads, q_off, q_stride, out_off, out_stride;
    float scale, softcap;
    uint32_t window, n_splits;
    uint32_t non_causal, chunk;
  } push{a.batch.n_tokens,
         a.batch.n_seqs,
         a.n_q_heads,
         n_kv,
         a.q.off,
         a.q.stride ? a.q.stride : a.n_q_heads * d,
         a.out.off,
         a.out.stride ? a.out.stride : a.n_q_heads * d,
         a.scale,
         a.softcap,
         a.window,
         a.n_splits,
         0,
         a.chunk};
  // Bit 0: no causal mask; bit 1: the open spans ignored (attention_range.glsl).
  push.non_causal = (a.causal ? 0u : 1u) | (a.open_span ? 0u : 2u);
  if (q8_here)
    require(a.q8.size >= uint64_t{a.batch.n_tokens} * a.n_q_heads * d * 5 / 4,
            "attention: q8 slice too small");
  if (f16)
    require(a.f16.size >= uint64_t{a.batch.n_tokens} * a.n_q_heads * d * 2,
            "attention: f16 slice too small");
  // With sinks every kernel is its *_sinks variant, which reads them from one more binding.
  const bool sinks = static_cast<bool>(a.sinks);
  const std::string sink_suffix = sinks ? "_sinks" : "";
  const uint32_t sink_buffers = sinks ? 1 : 0;
  const Pipeline* pipeline = nullptr;
  Groups groups{};
  // A decode-sized step (a few tokens per sequence on an unfilled device) takes the chunked
  // kernel even where the tensor cores could run it: their 64-row tiles would walk the context
  // serially for one sequence's handful of tokens.
  if (const DecodeShape ds = decode_shape(a, r, pc.device()); ds.positions) {
    pipeline = &pc.get({.shader = (q8_here    ? "attention_decode_q8"
                                   : f16_here ? "attention_decode_f16"
                                              : "attention_decode") +
                                  sink_suffix,
                        .num_buffers = (q8_here || f16_here ? 6u : 5u) + sink_buffers,
                        .push_constant_bytes = sizeof(push),
                        .spec = {ds.positions * ds.tpp, d, r / ds.head_groups, a.k_cache.block_size,
                                 ds.tpp, ds.head_groups, kv_type}});
    groups = {1, a.batch.n_tokens, n_kv * ds.head_groups * a.n_splits};
  } else if (attention_on_tensor_cores(a, caps)) {
    pipeline =
        &pc.get({.shader = (q8_here ? "attention_coopmat_q8" : "attention_coopmat") + sink_suffix,
                 .num_buffers = (q8_here ? 6u : 5u) + sink_buffers,
                 .push_constant_bytes = sizeof(push),
                 .spec = {4 * caps.subgroup_size, coopmat_head_dim(d), r, a.k_cache.block_size,
                          kv_type, d}});
    groups = {div_up(a.max_q_len, kCoopMatRows / r), a.batch.n_seqs, n_kv * a.n_splits};
  } else {
    // Rows per workgroup: the R heads of one KV head for BQ tokens; about 16 rows for prefill.
    // Where even tiles of 8 positions leave no room (heads of 512: Gemma 4's global layers),
    // fewer query tokens per workgroup.
    // Decode-sized steps (a speculative step's drafts): one token a workgroup, as decoding
    // each alone would run it (16 rows of 4 tokens cost 4.4x a decode of 8 sequences on an H200).
    uint32_t bq = runs_as_decode(a) ? 1 : std::max(1u, std::min(a.max_q_len, 16 / r));
    constexpr uint32_t wg = 128;
    require(bq * r <= wg, "GQA ratio " + std::to_string(r) + " above " + std::to_string(wg));
    uint32_t bc = 32;
    while (bc > 8 && shared_bytes(bq * r, bq, bc, d) > caps.max_shared_memory) bc /= 2;
    while (bq > 1 && shared_bytes(bq * r, bq, bc, d) > caps.max_shared_memory) bq /= 2;
    const uint32_t rows = bq * r;
    require(shared_bytes(rows, bq, bc, d) <= caps.max_shared_memory,
            "GQA ratio " + std::to_string(r) + " with head_dim " + std::to_string(d) +
                " needs more shared memory than the device has");
    // q8_0 caches are scored with int8 dot products where the device has them (not with sinks).
    const std::string stem =
        a.k_cache.type == kv::CacheType::Q8_0 && caps.integer_dot_product && !sinks && a.int8_scores
            ? "attention_kq8"
            : "attention";
    pipeline = &pc.get({.shader = (q8_here    ? stem + "_q8"
                                   : f16_here ? stem + "_f16"
                                              : stem) +
                                  sink_suffix,
                        .num_buffers = (q8_here || f16_here ? 6u : 5u) + sink_buffers,
                        .push_constant_bytes = sizeof(push),
                        .spec = {wg, d, bc, bq, r, a.k_cache.block_size, kv_type}});
    groups = {div_up(a.max_q_len, bq), a.batch.n_seqs, n_kv * a.n_splits};
  }
  // A dispatch with the kernel's buffers in binding order, then the sinks where given.
  auto dispatch = [&](const Pipeline& p, std::initializer_list<BufferSlice> list, const auto& args,
                      Groups g) {
    // At most 6 kernel buffers and the sinks; no allocation on the recording path.
    std::array<BufferSlice, 7> buffers;
    const size_t n = std::copy(list.begin(), list.end(), buffers.begin()) - buffers.begin();
    if (sinks) buffers[n] = a.sinks;
    rec.dispatch(p, std::span(buffers.data(), n + (sinks ? 1 : 0)),
                 std::as_bytes(std::span(&args, 1)), g);
  };
  const BufferSlice q = a.q.data, k = a.k_cache.data, v = a.v_cache.data, meta = a.batch.meta;
  if (a.n_splits == 1) {
    if (q8_here || f16_here) {
      dispatch(*pipeline, {q, k, v, meta, a.out.data, q8_here ? a.q8 : a.f16}, push, groups);
    } else {
      dispatch(*pipeline, {q, k, v, meta, a.out.data}, push, groups);
    }
    return;
  }
  require(a.scratch.size >= attention_scratch_bytes(a.n_splits, a.batch.n_tokens, a.n_q_heads, d),
          "scratch of " + std::to_string(a.scratch.size) + " bytes is too small for " +
              std::to_string(a.n_splits) + " splits");
  dispatch(*pipeline, {q, k, v, meta, a.scratch}, push, groups);
  rec.barrier();
  struct {
    uint32_t n_tokens, n_q_heads, head_dim, n_splits, out_off, out_stride;
  } rpush{a.batch.n_tokens, a.n_q_heads, d, a.n_splits, a.out.off, push.out_stride};
  const bool q8 = attention_writes_q8(a);
  const Pipeline& reduce = pc.get({.shader = (q8    ? "attention_reduce_q8"
                                              : f16 ? "attention_reduce_f16"
                                                    : "attention_reduce") +
                                             sink_suffix,
                                   .num_buffers = (q8 || f16 ? 3u : 2u) + sink_buffers,
                                   .push_constant_bytes = sizeof(rpush),
                                   .spec = {128}});
  const uint32_t rows_total = a.batch.n_tokens * a.n_q_heads;
  const Groups rgroups{std::min(rows_total, 65535u), div_up(rows_total, 65535), div_up(d, 32)};
  if (q8) {
    require(a.q8.size >= uint64_t{rows_total} * d * 5 / 4, "attention: q8 slice too small");
    dispatch(reduce, {a.scratch, a.out.data, a.q8}, rpush, rgroups);
  } else if (f16) {
    dispatch(reduce, {a.scratch, a.out.data, a.f16}, rpush, rgroups);
  } else {
    dispatch(reduce, {a.scratch, a.out.data}, rpush, rgroups);
  }
}

bool attention_writes_q8(const AttentionArgs& a) {
  return a.q8 && a.head_dim % 32 == 0 && a.out.off == 0 &&
         (a.out.stride == 0 || a.out.stride == a.n_q_heads * a.head_dim);
}

bool attention_writes_f16(const AttentionArgs& a, const DeviceCapabilities& caps) {
  return a.f16 && !attention_writes_q8(a) && a.head_dim % 32 == 0 && a.out.off == 0 &&
         (a.out.stride == 0 || a.out.stride == a.n_q_heads * a.head_dim) &&
         !attention_on_tensor_cores(a, caps);
}

}  // namespace vkllm::vk::ops
