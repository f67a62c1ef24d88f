// Attention over the paged f16 KV cache on the CPU, with the Vulkan kernel's semantics
// (engine/vulkan/attention.h; cache and metadata layout: engine/kv/kv_layout.h): for each batch
// token, each query head attends to its sequence's cached positions kp <= q_pos (causal; every
// kp < kv_len when not causal), restricted to q_pos - window < kp <= q_pos when a window is set
// (not causal: the symmetric |q_pos - kp| < window, as the Vulkan kernel); a query in its
// sequence's open span (the batch's seq_open: an image's tokens) also sees every later key up to
// kv_len, the window applying backwards only; scores are scale * q.k,
// soft-capped when softcap > 0; the output is the softmax-weighted sum of V rows (f32). Prefill and
// decode are the same call.
//
// Unit of work: (sequence, query tile, KV head, KV split). A query tile is up to
// attention_tile_tokens() consecutive tokens of one sequence; with its KV head it is processed as
// one group of rows = tokens x (n_q_heads / n_kv_heads) query heads, so every K/V row is
// converted from f16 once per group (GQA packing), with an online softmax over tiles of cached
// positions. Units are numbered sequence by sequence in batch order, then tile, then KV head,
// then split; a unit's cost is about its tokens times the positions they see.
//
// Split-K (kv_splits > 1, for decode with fewer groups than threads): each unit covers one
// contiguous slice of its group's visible positions and writes unnormalised partial results to
// `partials`; attention_reduce then combines the slices of each token into `out`.
#pragma once

#include <cstdint>

#include "engine/cpu/batch_view.h"
#include "engine/cpu/isa.h"
#include "engine/cpu/ops.h"

namespace vkllm::cpu {

struct AttentionArgs {
  ConstHeadRows q{};                  // f32: head h of token t at data + t*stride + h*head_dim
  const uint16_t* k_cache = nullptr;  // this layer's K region (rows as in CacheRegion)
  const uint16_t* v_cache = nullptr;  // this layer's V region
  kv::CacheType cache_type = kv::CacheType::F16;
  uint32_t n_kv_heads = 0;
  uint32_t block_size = 16;
  BatchView batch{};
  HeadRows out{};  // f32, indexed like q (may not alias q)
  uint32_t n_q_heads = 0;
  uint32_t head_dim = 0;  // at most 512
  float scale = 0.f;      // usually 1/sqrt(head_dim)
  float softcap = 0.f;    // 0: off
  uint32_t window = 0;    // 0: off; else only keys with 0 <= q_pos - k_pos < window
  // 0: off; else (causal only) only keys from q_pos - q_pos % chunk on (Llama 4's chunks).
  uint32_t chunk = 0;
  bool causal = true;     // false: every key of the sequence is visible (encoders)
  bool open_span = true;  // false: the sequences' open spans are ignored (causal there too)
  // n_q_heads logits (gpt-oss's attention sinks) that join each head's softmax denominator and
  // add no value; null: none.
  const float* sinks = nullptr;
  uint32_t kv_splits = 1;     // >= 1
  float* partials = nullptr;  // attention_partials_floats(a) floats when kv_splits > 1
};

// Query tokens per unit for these arguments (fills about 64 rows with the GQA heads).
uint32_t attention_tile_tokens(const AttentionArgs& a);
// Number of units of the batch. Throws std::invalid_argument for inconsistent arguments
// (n_q_heads not a multiple of n_kv_heads, head_dim 0 or > 512, block_size 0).
uint32_t attention_work_units(const AttentionArgs& a);
// Processes units [unit_begin, unit_end): writes their tokens' output rows for their KV head's
// query heads (with kv_splits > 1: their slices' partial results).
void attention(const AttentionArgs& a, uint32_t unit_begin, uint32_t unit_end,
               Isa isa = selected_isa());

// Split-K: scratch floats for the partials, and the second pass. Unit of attention_reduce: a
// batch token (all its query heads); it runs after every unit of attention() has finished.
uint64_t attention_partials_floats(const AttentionArgs& a);
void attention_reduce(const AttentionArgs& a, uint32_t token_begin, uint32_t token_end);

// A split count that gives `threads` threads about two units each when the batch has fewer groups
// than that (decode of few sequences), keeping at least 256 positions per slice; 1 otherwise.
uint32_t attention_suggested_splits(const AttentionArgs& a, uint32_t max_kv_len, uint32_t threads);

}  // namespace vkllm::cpu
