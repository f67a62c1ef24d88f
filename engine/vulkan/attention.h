// Attention over the paged f16 KV cache (layout: engine/kv/kv_layout.h), for prefill and decode:
// flash-attention style tiles, online softmax, GQA packing (the query heads that share a KV head
// are processed together), causal and sliding-window masks computed from positions, optional
// logit soft-capping, and split-K over the KV length with a reduction pass for long contexts.
// Non-causal attention (encoders) is the same kernel with the causal mask off. Prefill runs on
// tensor cores where the device has them; decode steps with few workgroups on a kernel of their
// own (attention_decode.comp: latency over reuse), as do sequences of a few tokens each (a
// speculative step's drafts, up to kDecodeMaxQueryTokens: one workgroup per token).
#pragma once

#include <cstdint>
#include <string>

#include "engine/vulkan/buffer.h"
#include "engine/vulkan/device.h"
#include "engine/vulkan/kernel_tuning.h"
#include "engine/vulkan/ops.h"

namespace vkllm::vk::ops {

// Which kernel runs a decode step (one query token per sequence): attention_decode.comp, which
// reads a chunk of positions per round trip to memory, or the tiled attention.comp. Auto: the
// chunked one for unsplit steps whose grid leaves compute units idle (see attention.cpp).
enum class DecodeKernel { Auto, Chunked, Tiled };

struct AttentionArgs {
  HeadRows q;                    // f32 queries: head h of token t at off + t*stride + h*head_dim
  CacheRegion k_cache, v_cache;  // this layer's regions (n_kv_heads and block_size must match)
  BatchInfo batch;
  uint32_t max_q_len = 1;   // the longest sequence's token count this step (kv::BatchMeta)
  uint32_t max_kv_len = 0;  // the longest sequence's context after this step (0: not given)
  HeadRows out;             // f32, same indexing as q
  uint32_t n_q_heads = 0;
  uint32_t head_dim = 0;  // a multiple of 4, at most kAttentionMaxHeadDim
  float scale = 0.f;      // usually 1/sqrt(head_dim)
  float softcap = 0.f;    // 0: off
  uint32_t window = 0;    // 0: off; else keys with q_pos - k_pos < window are visible
                          // (not causal: |q_pos - k_pos| < window, a symmetric window)
  uint32_t chunk = 0;     // 0: off; else (causal) keys from q_pos - q_pos % chunk on (Llama 4)
  bool causal = true;     // false: every key of the sequence is visible (encoders)
  bool open_span = true;  // false: the sequences' open spans are ignored (causal there too)
  uint32_t n_splits = 1;  // split-K factor, at most kAttentionMaxSplits; > 1 needs `scratch`
  BufferSlice scratch;    // attention_scratch_bytes(...) bytes when n_splits > 1
  // Optional: `out` is also written as q8 blocks here (record_quantize_q8's layout, out's rows as
  // the vectors; by the split reduction, or by the attention kernel itself without splits) for
  // the int8-dot products that read it. Taken only where attention_writes_q8() says so; otherwise
  // ignored.
  BufferSlice q8{};
  // Optional: `out` also as f16 rows (n_q_heads * head_dim halves a token) for the tensor-core
  // GEMM of the output projection (MatmulArgs::x_f16). Taken only where attention_writes_f16()
  // says so; otherwise ignored.
  BufferSlice f16{};
  // Optional: one f32 logit per query head that joins each head's softmax denominator (gpt-oss's
  // attention sinks; the *_sinks kernel variants).
  BufferSlice sinks{};
  // Prefill on tensor cores where attention_on_tensor_cores() allows it; false keeps the scalar
  // kernel (tests compare the two).
  bool tensor_cores = true;
  // q8_0 caches on the tiled kernel: scores as int8 dot products of K with the queries quantized
  // to q8 blocks, where the device has integer dot products (no sinks); false expands K to f16
  // (tests compare the two).
  bool int8_scores = true;
  // Decode steps: Chunked where the kernel can (GQA ratios up to 16), Tiled, or by the grid.
  DecodeKernel decode_kernel = DecodeKernel::Auto;
  // Chunked decode kernel: workgroups per KV head, each with its share of the query heads (a
  // divisor of the GQA ratio); 0: as many as keep the grid within one workgroup per compute unit
  // (KernelTuning::attn_head_groups forces a count where it divides the ratio).
  uint32_t head_groups = 0;
};

// Whether attention() runs these arguments on the tensor-core kernel (attention_coopmat.comp):
// the device has VK_NV_cooperative_matrix's f16 16x16x16 shape, the step has more than
// kDecodeMaxQueryTokens query tokens in some sequence, head_dim a multiple of 16 up to 256 (with
// its shared arrays within the device's shared memory: 47.6 KiB at 256), a GQA ratio that divides
// 64, q rows 16-byte aligned, and a.tensor_cores. Its results differ from the scalar kernel's by
// the f16 rounding of Q and of the softmax weights.
bool attention_on_tensor_cores(const AttentionArgs& a, const DeviceCapabilities& caps);

// Whether attention() with these arguments writes args.q8: dense output rows (off 0, stride
// n_q_heads * head_dim) and head_dim a multiple of 32.
bool attention_writes_q8(const AttentionArgs& a);

// Whether attention() with these arguments writes args.f16: no q8 output, the same row
// conditions, and the scalar kernel (not the tensor-core one, attention_on_tensor_cores).
bool attention_writes_f16(const AttentionArgs& a, const DeviceCapabilities& caps);

// Largest head size the kernels take (Gemma 4's global layers). Heads above 256 run on the tiled
// kernel (the chunked decode kernel's V rows outgrow shared memory, the tensor-core one takes up
// to 128), with fewer query tokens per workgroup where the device's shared memory needs it.
inline constexpr uint32_t kAttentionMaxHeadDim = 512;

// Why attention() cannot run heads of head_dim with gqa query heads per KV head on a device with
// these capabilities, whatever the step (the tiled kernel, which every step can fall back to, needs
// the shared memory of one query token's gqa rows and 8-position K/V tiles); empty where it can.
// Heads of 512 at a GQA ratio of 8 need 33 KiB.
std::string attention_unsupported(uint32_t head_dim, uint32_t gqa, const DeviceCapabilities& caps);

// Steps of up to kDecodeMaxQueryTokens tokens per sequence (a speculative step's last token and
// its drafts, a short chat turn) within kDecodeMaxContext positions run as decode does: one
// workgroup per token on the chunked or tiled kernel, f32 throughout. Past that context the
// tensor-core kernel's reading the KV once for 16 tokens wins (H200, one sequence's 8 tokens
// after 8k positions: 214 us against 548 on the tiled kernel), so they run as prefill.
inline constexpr uint32_t kDecodeMaxQueryTokens = 16;
inline constexpr uint32_t kDecodeMaxContext = 4096;

// Most splits the split-K reduction (shaders/attention_reduce.comp) combines.
inline constexpr uint32_t kAttentionMaxSplits = 256;

// Bytes of scratch the split-K path needs.
uint64_t attention_scratch_bytes(uint32_t n_splits, uint32_t n_tokens, uint32_t n_q_heads,
                                 uint32_t head_dim);

// A split count that keeps the device reading for decode (about split_target workgroups per
// compute unit, KernelTuning::attn_split_target), capped so each split still covers at least 64
// positions and at kAttentionMaxSplits; contexts of up to 256 positions are not split (the chunked
// decode kernel reads them faster than the reduction's own pass costs) (1 = no split). n_tokens:
// the step's query tokens, each its own workgroups at decode sizes (sequences, or a speculative
// step's drafts). Heads above
// 256 (Gemma 4's global layers) have no chunked kernel: the tiled one walks tiles of 8 positions
// with barriers between, so they split from 32 positions on, 16 positions a split.
uint32_t attention_suggested_splits(uint32_t max_kv_len, uint32_t n_tokens, uint32_t n_kv_heads,
                                    uint32_t compute_units,
                                    uint32_t split_target = KernelTuning{}.attn_split_target,
                                    uint32_t head_dim = 128);

// Splits for a prefill step (query tiles of 64 (token, head) rows): a long context's prefill has
// few workgroups, each walking the whole context; splitting aims at four times decode's
// split_target workgroups per compute unit, each split covering at least 1024 positions (1 = no
// split).
uint32_t attention_prefill_splits(uint32_t max_kv_len, uint32_t max_q_len, uint32_t n_seqs,
                                  uint32_t n_kv_heads, uint32_t gqa, uint32_t compute_units,
                                  uint32_t split_target = KernelTuning{}.attn_split_target);

// Records the attention dispatch (and, with splits, a barrier and the reduction dispatch).
void attention(CommandRecorder& rec, PipelineCache& pipelines, const AttentionArgs& a);

}  // namespace vkllm::vk::ops
