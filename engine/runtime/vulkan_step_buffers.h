// The device memory of the Vulkan StepBackend (engine/runtime/vulkan_backend.h): the step's
// activations and scratch in one arena, the host-written step inputs, the readback buffer of the
// results and the paged KV cache's per-layer K and V regions. Sized once, at construction, for the
// Runner's limits, which it first lowers to what one storage-buffer binding holds; the backend
// maps the graph's Act/Rows onto these buffers through buf, slice and head_rows.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/kv/kv_layout.h"
#include "engine/kv/state_layout.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "engine/runtime/step_backend.h"
#include "engine/vulkan/arena.h"
#include "engine/vulkan/attention.h"
#include "engine/vulkan/buffer.h"
#include "engine/vulkan/ops.h"

namespace vkllm::runtime {

// Split-K attention's limits: the scratch here holds kAttentionSplitRows (split, token) partial
// rows, so a step of n tokens splits at most kAttentionSplitRows / n ways (one decode token: up
// to the reduction's limit, which long contexts need to keep every compute unit reading; a
// 512-token prefill after a long context: 8, attention_prefill_splits).
inline constexpr uint32_t kMaxAttentionSplits = vk::ops::kAttentionMaxSplits;
inline constexpr uint32_t kMaxSplitTokens = 64;  // decode-sized steps: attention_suggested_splits
inline constexpr uint32_t kAttentionSplitRows = 4096;

// How many sequences' recurrent states the Vulkan backend holds: max_seqs, or fewer where the
// whole model's states for max_seqs would not fit one storage-buffer binding (the recurrent
// kernels bind them all). A sequence beyond them waits for a slot as for KV blocks.
uint32_t state_slot_count(const vk::DeviceCapabilities& caps, const model::ModelSpec& spec,
                          const RunnerOptions& opt);
// How many captured states (RunnerOptions::draft_states) follow them in the same binding: as
// many as asked for, or as fit beside the live slots.
uint32_t captured_state_count(const vk::DeviceCapabilities& caps, const model::ModelSpec& spec,
                              const RunnerOptions& opt);

struct VulkanStepBuffers {
  // Lowers o.max_batch_tokens and o.max_logits_rows to one binding's worth (throws
  // std::invalid_argument when max_seqs rows do not fit), then allocates everything.
  VulkanStepBuffers(vk::Context& ctx, const Model& model, RunnerOptions& o);

  vk::BufferSlice& buf(Act a);
  // The activation from the rows' first element on.
  vk::BufferSlice slice(Rows r) {
    vk::BufferSlice& b = buf(r.act);
    return r.off == 0 ? b : b.sub(uint64_t(r.off) * 4, b.size - uint64_t(r.off) * 4);
  }
  vk::ops::HeadRows head_rows(Rows r) { return {buf(r.act), r.off, r.stride}; }

  // Where the greedy tokens follow the logits in the readback buffer.
  uint64_t greedy_at() const { return uint64_t(max_rows) * spec.n_vocab * 4; }

  // embed_row's row ids: each in an upload slot of its own (a step's rows are few).
  static constexpr uint32_t kMaxRowIds = 16;
  static constexpr uint32_t kRowIdSpacing = 256;  // any storage-buffer offset alignment

  vk::Context& ctx;
  const Model& m;
  const model::ModelSpec& spec;
  RunnerOptions opt;
  uint32_t max_rows = 0;  // logits rows per step
  uint32_t max_meta_words = 0;
  uint64_t act_bytes = 0;
  kv::KvLayout layout;
  std::optional<vk::Arena> kv_arena;
  std::vector<vk::BufferSlice> k_region, v_region;  // empty for recurrent layers
  // Recurrent states (kv::StateLayout: one per sequence slot, of this model's or stage's
  // recurrent layers), on the device; absent without them.
  kv::StateLayout state_layout;
  vk::Buffer states;
  // State checkpoints (kv::StateCheckpoints): as many slots of state_layout.slot_floats, in a
  // buffer of their own (only copied, never bound to a kernel).
  uint32_t n_checkpoints = 0;
  vk::Buffer checkpoints;
  std::optional<vk::Arena> act;
  vk::Buffer ids_in, sel_in, meta_in;  // host-written step inputs
  vk::Buffer pos_in, row_ids;          // encoders: positions, embed_row's row ids
  vk::Buffer rope_pos_in;              // M-RoPE models: (t, h, w) per step token
  // RunnerOptions::embedding_inputs: rows that replace token embeddings (T x n_embd floats).
  vk::Buffer rows_in;
  vk::Buffer readback;
  // RunnerOptions::token_hidden: every step token's hidden state after the final norm (T x
  // n_embd floats), beside the requested rows' results.
  vk::Buffer token_readback;
  // Stages of a split model: the residual stream (T x n_embd) from the stage before, and for the
  // stage after (absent on the first and last stage respectively, and on a whole model).
  vk::Buffer stage_in, stage_out;
  vk::BufferSlice x, h, q, k, v, qkv, attn, gate, up, ffn_act, xsel, hsel, logits, greedy, scratch,
      argmax_scratch, xq;
  // An activation as f16 rows (up to f16_rows of them), written by the norm or GLU before a
  // tensor-core product so that it does not convert its input itself.
  vk::BufferSlice x_f16;
  uint32_t f16_rows = 0;
  // Zeroed words (f16_rows of them) in which the split-K reduction with a norm counts each
  // token's finished workgroups.
  vk::BufferSlice row_counters;
  // Mixture-of-experts models: each token's selected experts (uint32) and their weights, in rank
  // order (n_expert_used per token).
  vk::BufferSlice moe_ids, moe_weights;
  // The grouped path (VulkanBackend::moe_ffn at prefill sizes): the pairs grouped by expert
  // (vk::ops::moe_group's layout) and each pair's down product (n_embd floats a pair).
  vk::BufferSlice moe_groups, moe_pair_out;
  // Gemma 3n's activations (step_backend.h: Alt, AltPred, PerLayer, Aux, AuxB, Modal, Coef), and
  // of them Gemma 4's PerLayer, Aux and AuxB; absent for other models.
  vk::BufferSlice alt, alt_pred, per_layer, aux, aux_b, modal, coef;

 private:
  uint64_t S_words() const { return std::max<uint32_t>(max_rows, 4); }
  // One of Gemma 3n's or Gemma 4's activations; throws std::logic_error where the model has none.
  static vk::BufferSlice& gemma_act(vk::BufferSlice& s);
  void allocate_activations();
  void allocate_kv();
};

}  // namespace vkllm::runtime
