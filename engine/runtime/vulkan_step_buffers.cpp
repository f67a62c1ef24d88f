#include "engine/runtime/vulkan_step_buffers.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/runtime/kv_footprint.h"
#include "engine/vulkan/attention.h"
#include "engine/vulkan/matmul_ops.h"
#include "engine/vulkan/moe_ops.h"
#include "engine/vulkan/transfer.h"

namespace vkllm::runtime {

VulkanStepBuffers::VulkanStepBuffers(vk::Context& c, const Model& model, RunnerOptions& o)
    : ctx(c), m(model), spec(model.spec()) {
  // Activations and logits are bound whole: keep a step's tokens and logits rows within one
  // storage-buffer binding (lavapipe: 128 MiB; VKLLM_MAX_BINDING_RANGE lowers it).
  const uint64_t range = ctx.caps().max_storage_buffer_range;
  // (MoE: the grouped path's down product of each of a token's pairs, n_expert_used rows.)
  // (Gemma 3n and Gemma 4: the AltUp streams and the per-layer inputs, zero wide for other
  // models.)
  const uint64_t token_bytes =
      4 * std::max<uint64_t>({uint64_t(spec.qkv_act_width()), 2ull * spec.n_ff, spec.n_embd,
                              uint64_t(spec.n_expert_used) * spec.n_embd,
                              uint64_t(spec.n_altup) * spec.n_embd,
                              uint64_t(spec.n_layer) * spec.n_embd_altup});
  const uint64_t logits_row_bytes = 4ull * spec.n_vocab;
  if (uint64_t(o.max_seqs) * std::max(token_bytes, logits_row_bytes) > range) {
    throw std::invalid_argument(std::to_string(o.max_seqs) +
                                " sequences per step need activations larger than the "
                                "device's storage-buffer range of " +
                                std::to_string(range) + " bytes");
  }
  o.max_batch_tokens =
      static_cast<uint32_t>(std::min<uint64_t>(o.max_batch_tokens, range / token_bytes));
  o.max_logits_rows =
      static_cast<uint32_t>(std::min<uint64_t>(o.max_logits_rows, range / logits_row_bytes));
  opt = o;
  max_rows = o.max_logits_rows;
  allocate_activations();
  allocate_kv();
}

vk::BufferSlice& VulkanStepBuffers::buf(Act a) {
  switch (a) {
    case Act::X:
      return x;
    case Act::H:
      return h;
    case Act::Q:
      return q;
    case Act::K:
      return k;
    case Act::V:
      return v;
    case Act::QKV:
      return qkv;
    case Act::Attn:
      return attn;
    case Act::Gate:
      return gate;
    case Act::Up:
      return up;
    case Act::FfnAct:
      return ffn_act;
    case Act::XSel:
      return xsel;
    case Act::HSel:
      return hsel;
    case Act::Logits:
      return logits;
    case Act::Alt:
      return gemma_act(alt);
    case Act::AltPred:
      return gemma_act(alt_pred);
    case Act::PerLayer:
      return gemma_act(per_layer);
    case Act::Aux:
      return gemma_act(aux);
    case Act::AuxB:
      return gemma_act(aux_b);
    case Act::Modal:
      return gemma_act(modal);
    case Act::Coef:
      return gemma_act(coef);
  }
  throw std::logic_error("unknown activation");
}

vk::BufferSlice& VulkanStepBuffers::gemma_act(vk::BufferSlice& s) {
  if (!s) throw std::logic_error("a Gemma 3n / Gemma 4 activation used by a model without it");
  return s;
}

void VulkanStepBuffers::allocate_activations() {
  const uint64_t T = opt.max_batch_tokens, E = spec.n_embd;
  const uint64_t qd = spec.n_embd_q(), kvd = spec.n_embd_k_gqa();
  // Encoders pool into Logits and read every token's row of X back.
  const bool encoder = spec.is_encoder();
  const uint64_t ff = spec.ffn_act_width(), R = max_rows;
  // The widest input of any product beyond E, qd and ff: EmbeddingGemma's dense_3.
  const uint64_t widest_in = spec.n_dense;
  const uint64_t V = encoder ? spec.encoder_rows_width() : spec.n_vocab;
  const uint64_t split_bytes =
      vk::ops::attention_scratch_bytes(1, kAttentionSplitRows, spec.n_head, spec.head_dim);
  const uint64_t qkv_w = spec.qkv_act_width(), attn_w = spec.attn_act_width();
  const uint64_t sizes[] = {T * E,      T * E,  T * qd, T * kvd, T * kvd, T * qkv_w, T * attn_w,
                            T * ff * 2, T * ff, T * ff, R * E,   R * E,   R * V};
  const uint64_t align = 256;
  const uint64_t argmax_bytes = std::max<uint64_t>(vk::ops::argmax_scratch_bytes(V, R), 16);
  const auto q8_rows =
      static_cast<uint32_t>(std::min<uint64_t>(std::max(T, R), opt.matvec_max_batch));
  const uint64_t xq_bytes =
      vk::q8_activation_bytes(static_cast<uint32_t>(std::max({E, qd, ff, widest_in})), q8_rows);
  // f16 copies serve the tensor-core GEMMs, with rows up to a multiple of 128 tokens (the
  // workgroup-scope GEMM's widest token tile, which it then loads unchecked).
  f16_rows = static_cast<uint32_t>((std::max(T, R) + 127) / 128 * 128);
  const uint64_t x_f16_bytes = uint64_t{f16_rows} * std::max({E, qd, ff, widest_in}) * 2;
  const uint64_t moe_bytes = spec.is_moe() ? 4ull * T * spec.n_expert_used : 0;
  const uint64_t moe_groups_bytes =
      spec.is_moe() ? 4 * vk::ops::moe_group_words(T * spec.n_expert_used) : 0;
  const uint64_t moe_pair_bytes = moe_bytes * E;
  // Gemma 3n's AltUp streams and their predictions, per-layer inputs, scratch rows, router outputs
  // and coefficients (step_backend.h's Act); Gemma 4's per-layer inputs and scratch rows (its MoE
  // layers: the experts' and the router's inputs, n_embd each); none for other models.
  const uint64_t A = spec.n_altup, PL = uint64_t(spec.n_layer) * spec.n_embd_altup;
  const uint64_t g = spec.is_gemma3n() || spec.is_gemma4() ? 1 : 0;
  const uint64_t aux_w = std::max({PL, (A ? A - 1 : 0) * E, spec.is_gemma4() ? E : 0});
  const uint64_t gemma_sizes[] = {g * T * A * E,
                                  g * T * A * E,
                                  g * T * PL,
                                  g * T * aux_w,
                                  g * T * std::max<uint64_t>(E, spec.laurel_rank),
                                  g * T * A,
                                  g * T * A * A};
  act_bytes = split_bytes + argmax_bytes + xq_bytes + x_f16_bytes + 4ull * f16_rows + 6 * align +
              4 * (S_words() + align) + 2 * (moe_bytes + align) + moe_groups_bytes +
              moe_pair_bytes + 2 * align;
  for (uint64_t s : sizes) act_bytes += (s * 4 + align - 1) / align * align + align;
  for (uint64_t s : gemma_sizes) act_bytes += (s * 4 + align - 1) / align * align + align;
  act.emplace(ctx.device(), "activations", act_bytes);
  auto f32 = [&](uint64_t n) { return act->allocate(n * 4); };
  x = f32(T * E);
  h = f32(T * E);
  q = f32(T * qd);
  k = f32(T * kvd);
  v = f32(T * kvd);
  qkv = f32(T * qkv_w);
  attn = f32(T * attn_w);
  up = f32(T * ff * 2);  // fused gate|up needs twice n_ff
  gate = f32(T * ff);
  ffn_act = f32(T * ff);
  xsel = f32(R * E);
  hsel = f32(R * E);
  logits = f32(R * V);
  greedy = act->allocate(4 * S_words());
  scratch = act->allocate(split_bytes);
  argmax_scratch = act->allocate(argmax_bytes);
  xq = act->allocate(xq_bytes);
  x_f16 = act->allocate(x_f16_bytes);
  row_counters = act->allocate(4ull * f16_rows);
  if (moe_bytes) {
    moe_ids = act->allocate(moe_bytes);
    moe_weights = act->allocate(moe_bytes);
    moe_groups = act->allocate(moe_groups_bytes);
    moe_pair_out = act->allocate(moe_pair_bytes);
  }
  if (g) {
    vk::BufferSlice* gemma[] = {&alt, &alt_pred, &per_layer, &aux, &aux_b, &modal, &coef};
    // Gemma 4 has no AltUp: its Alt, AltPred, Modal and Coef stay absent.
    for (size_t i = 0; i < std::size(gemma); ++i)
      if (gemma_sizes[i] > 0) *gemma[i] = f32(gemma_sizes[i]);
  }
  const std::vector<uint32_t> zeros(f16_rows);
  vk::upload(ctx.device(), row_counters, std::span<const uint32_t>(zeros));

  const uint32_t max_blocks = (opt.max_context + opt.block_size - 1) / opt.block_size;
  max_meta_words =
      static_cast<uint32_t>(2 * T + kv::kMetaSeqWords * opt.max_seqs + opt.max_seqs * max_blocks);
  ids_in = vk::Buffer(ctx.device(), 4 * T, vk::MemoryKind::Upload, "step token ids");
  sel_in = vk::Buffer(ctx.device(), 4 * R, vk::MemoryKind::Upload, "step logits rows");
  meta_in = vk::Buffer(ctx.device(), 4ull * max_meta_words, vk::MemoryKind::Upload,
                       "step batch metadata");
  if (spec.position_embd) {
    pos_in = vk::Buffer(ctx.device(), 4 * T, vk::MemoryKind::Upload, "step positions");
  }
  if (spec.uses_mrope()) {
    rope_pos_in =
        vk::Buffer(ctx.device(), 12ull * T, vk::MemoryKind::Upload, "step M-RoPE positions");
  }
  if (encoder) {
    row_ids = vk::Buffer(ctx.device(), uint64_t(kRowIdSpacing) * kMaxRowIds, vk::MemoryKind::Upload,
                         "step row ids");
  }
  if (opt.embedding_inputs && m.has_embeddings())  // the whole model, or a split's first stage
    rows_in = vk::Buffer(ctx.device(), 4ull * T * spec.n_embd_inp(), vk::MemoryKind::Upload,
                         "step embedding rows");
  readback =
      vk::Buffer(ctx.device(), 4 * (std::max(R * std::max(V, E), encoder ? T * E : 0) + S_words()),
                 vk::MemoryKind::Readback, "step results");
  if (opt.token_hidden)
    token_readback = vk::Buffer(ctx.device(), 4 * T * E, vk::MemoryKind::Readback, "token states");
  // A stage of a split model receives the residual stream from the stage before it and hands it
  // to the next through host-visible memory; a row shard hands its partial sums out and takes
  // the summed stream back.
  if (m.is_stage() || m.shard().split()) {
    if (!m.has_embeddings() || m.shard().split())
      stage_in = vk::Buffer(ctx.device(), 4 * T * E, vk::MemoryKind::Upload, "stage input");
    if (!m.has_output() || m.shard().split())
      stage_out = vk::Buffer(ctx.device(), 4 * T * E, vk::MemoryKind::Readback, "stage output");
  }
}

namespace {

// How many whole recurrent states (every layer's, of the whole model: every stage of a split
// model has the same slots) one storage-buffer binding holds; nullopt for a model without any.
// The recurrent kernels bind the whole state buffer (kv::StateLayout is slot-major: a layer's
// states lie a slot apart): Granite 4.0-H Micro's 77 MB a sequence at 64 sequences did not fit
// (4.9 GB; the H200 binds 4 GiB).
std::optional<uint64_t> states_per_binding(const vk::DeviceCapabilities& caps,
                                           const model::ModelSpec& spec) {
  const uint64_t slot_bytes =
      4 * kv::StateLayout::make(spec.recurrent_state_floats(), 1).slot_floats;
  if (slot_bytes == 0) return std::nullopt;
  const uint64_t fit = caps.max_storage_buffer_range / slot_bytes;
  if (fit == 0) {
    throw std::runtime_error("one sequence's recurrent state (" + std::to_string(slot_bytes) +
                             " bytes) exceeds the device's storage-buffer range of " +
                             std::to_string(caps.max_storage_buffer_range) + " bytes");
  }
  return fit;
}

}  // namespace

uint32_t state_slot_count(const vk::DeviceCapabilities& caps, const model::ModelSpec& spec,
                          const RunnerOptions& opt) {
  // Beyond what the binding holds a sequence waits for a slot as it waits for KV blocks.
  const auto fit = states_per_binding(caps, spec);
  return fit ? static_cast<uint32_t>(std::min<uint64_t>(*fit, opt.max_seqs)) : opt.max_seqs;
}

uint32_t captured_state_count(const vk::DeviceCapabilities& caps, const model::ModelSpec& spec,
                              const RunnerOptions& opt) {
  // In the same binding as the live slots, after them: what it has room for.
  const auto fit = states_per_binding(caps, spec);
  if (!fit) return 0;
  return static_cast<uint32_t>(
      std::min<uint64_t>(*fit - std::min<uint64_t>(*fit, opt.max_seqs), opt.draft_states));
}

void VulkanStepBuffers::allocate_kv() {
  // A stage of a split model keeps its own layers' states (for the same slots as the others).
  std::vector<uint64_t> state_floats = spec.recurrent_state_floats();
  for (uint32_t l = 0; l < spec.n_layer; ++l)
    if (l < m.layers().first || l >= m.layers().end) state_floats[l] = 0;
  state_layout = kv::StateLayout::make(state_floats, state_slot_count(ctx.caps(), spec, opt),
                                       captured_state_count(ctx.caps(), spec, opt));
  if (!state_layout.empty()) {
    // Zeroed once for determinism; a sequence's first step reads no state anyway.
    states = vk::Buffer(ctx.device(), state_layout.bytes(), vk::MemoryKind::DeviceLocal,
                        "recurrent states");
    const std::vector<float> zeros(state_layout.floats());
    vk::upload(ctx.device(), states.slice(), std::span<const float>(zeros));
  }
  // Every layer's region is as wide as the widest layer's K/V heads (kv_footprint.h, the rule
  // the scheduler's accounting uses too); a layer with fewer or smaller heads (Gemma 4's local
  // ones) uses the front of its region, rows in its own [block][head][slot] order.
  layout.block_size = opt.block_size;
  layout.type = opt.kv_cache_type;
  const uint32_t widest = widest_kv_layer(spec, layout.type);
  layout.n_kv_heads = spec.n_head_kv_of(widest);
  layout.head_dim = spec.head_dim_of(widest);
  if (opt.kv_scratch_blocks > 0) {  // one K and one V region shared by every layer
    layout.num_blocks = opt.kv_scratch_blocks;
    const uint64_t region = layout.region_bytes();
    kv_arena.emplace(ctx.device(), "scratch k/v", (region + 256) * 2, vk::MemoryKind::DeviceLocal,
                     region + 256);
    k_region.assign(spec.n_layer, kv_arena->allocate(region));
    v_region.assign(spec.n_layer, kv_arena->allocate(region));
    return;
  }
  // A stage of a split model holds its own layers' K and V (the other layers' regions stay empty).
  const LayerRange& own = m.layers();
  uint32_t n_own = 0;  // own layers with K/V (ModelSpec::owns_kv: recurrent ones have none)
  for (uint32_t l = own.first; l < own.end; ++l) n_own += spec.owns_kv(l) ? 1 : 0;
  n_own = std::max(n_own, 1u);
  const uint64_t per_block = layout.block_bytes(n_own);  // K and V
  uint64_t budget = opt.kv_budget_bytes;
  if (budget == 0) {
    // Enough for every sequence at full context, but at most half of what the weights and
    // activations leave of the device's largest memory heap.
    const uint64_t heap = ctx.caps().device_local_bytes;
    const uint64_t used = m.weight_bytes() + act_bytes;
    const uint64_t share = heap > used ? (heap - used) / 2 : per_block * 64;
    // (The recurrent states and their checkpoints come out of the budget below, so they are
    // wanted too.)
    const uint64_t want = kv_budget_with_states(
        per_block * opt.max_seqs * ((opt.max_context + opt.block_size - 1) / opt.block_size),
        state_layout.bytes(), opt.state_checkpoint_share);
    budget = std::min(share, want);
  }
  const uint64_t slot_bytes = 4 * state_layout.slot_floats;
  const KvBudgetSplit split =
      split_kv_budget(budget, state_layout.bytes(), slot_bytes, opt.state_checkpoint_share);
  n_checkpoints = split.checkpoints;
  if (n_checkpoints) {
    checkpoints = vk::Buffer(ctx.device(), n_checkpoints * slot_bytes, vk::MemoryKind::DeviceLocal,
                             "state checkpoints");
  }
  uint64_t blocks =
      opt.kv_blocks ? opt.kv_blocks : std::max<uint64_t>(split.block_bytes / per_block, 1);
  // One layer's region must fit one arena block and one storage-buffer binding.
  const uint64_t region_limit =
      std::min<uint64_t>({uint64_t(1) << 30, ctx.caps().max_storage_buffer_range});
  const uint64_t per_block_region = per_block / (2ull * n_own);
  blocks = std::min(blocks, region_limit / per_block_region);
  blocks = std::min<uint64_t>(blocks, uint32_t(-1) / 2);
  layout.num_blocks = static_cast<uint32_t>(blocks);
  const uint64_t region = layout.region_bytes();
  kv_arena.emplace(ctx.device(), "kv cache", (region + 256) * 2 * n_own,
                   vk::MemoryKind::DeviceLocal, region + 256);
  k_region.resize(spec.n_layer);
  v_region.resize(spec.n_layer);
  for (uint32_t l = own.first; l < own.end; ++l) {
    if (!spec.owns_kv(l)) continue;
    k_region[l] = kv_arena->allocate(region);
    v_region[l] = kv_arena->allocate(region);
  }
  // Gemma 3n's and Gemma 4's shared-KV layers read the regions of the layer they share
  // (ModelSpec::kv_layer), which a stage must hold too.
  for (uint32_t l = own.first; l < own.end; ++l) {
    if (spec.owns_kv(l) || spec.is_recurrent(l)) continue;
    const uint32_t from = spec.kv_layer(l);
    if (!own.contains(from)) {
      throw std::runtime_error("layer " + std::to_string(l) + " reads the KV cache of layer " +
                               std::to_string(from) +
                               ", which another stage of the split model holds");
    }
    k_region[l] = k_region[from];
    v_region[l] = v_region[from];
  }
}

}  // namespace vkllm::runtime
