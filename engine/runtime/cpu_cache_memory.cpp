#include "engine/runtime/cpu_cache_memory.h"

#include <algorithm>
#include <cstdlib>
#include <new>

#include "engine/runtime/kv_footprint.h"
#include "engine/runtime/system_memory.h"

namespace vkllm::runtime {

CpuCacheMemory::CpuCacheMemory(const model::ModelSpec& spec, const RunnerOptions& o)
    : scratch(o.kv_scratch_blocks > 0) {
  // Recurrent states: one per sequence slot, zero until written (a sequence's first step reads
  // none).
  states = kv::StateLayout::make(spec.recurrent_state_floats(), o.max_seqs, o.draft_states);
  if (!states.empty()) state_data = host_array<float>(states.floats());
  kv_regions = 0;
  kv_region_of.assign(spec.n_layer, 0);
  for (uint32_t l = 0; l < spec.n_layer; ++l) {
    if (spec.owns_kv(l))
      kv_region_of[l] = kv_regions++;
    else if (!spec.is_recurrent(l))  // a shared layer: its region is an earlier layer's
      kv_region_of[l] = kv_region_of[spec.kv_layer(l)];
  }
  if (o.kv_scratch_blocks > 0) kv_regions = 1;
  layout.type = o.kv_cache_type;
  const uint32_t widest = widest_kv_layer(spec, layout.type);
  layout.n_kv_heads = spec.n_head_kv_of(widest);
  layout.head_dim = spec.head_dim_of(widest);
  layout.block_size = o.block_size;
  const uint64_t per_block = layout.block_bytes(kv_regions);  // K and V
  uint64_t budget = o.kv_budget_bytes;
  if (o.kv_scratch_blocks > 0) {  // one K and one V region shared by every layer
    layout.num_blocks = o.kv_scratch_blocks;
    kv.reset(
        static_cast<uint16_t*>(std::calloc(2ull * layout.region_elements(), sizeof(uint16_t))));
    if (!kv) throw std::bad_alloc();
    return;
  }
  if (budget == 0) {
    // Every sequence at full context, but at most half of what the system has available.
    // (The recurrent states and their checkpoints come out of the budget below, so they are
    // wanted too.)
    const uint64_t want = kv_budget_with_states(
        per_block * o.max_seqs * ((o.max_context + o.block_size - 1) / o.block_size),
        states.bytes(), o.state_checkpoint_share);
    const uint64_t available = system_memory_available();
    budget = available ? std::min(want, available / 2) : std::min<uint64_t>(want, 1ull << 30);
  }
  const KvBudgetSplit split =
      split_kv_budget(budget, states.bytes(), 4 * states.slot_floats, o.state_checkpoint_share);
  n_checkpoints = split.checkpoints;
  if (n_checkpoints)
    checkpoint_data = host_array<float>(uint64_t(n_checkpoints) * states.slot_floats);
  uint64_t blocks = std::max<uint64_t>(split.block_bytes / per_block, 1);
  blocks = std::min<uint64_t>(blocks, uint32_t(-1) / 2);
  layout.num_blocks = static_cast<uint32_t>(blocks);
  // calloc: the pages of a large cache are only touched as sequences fill them.
  kv.reset(static_cast<uint16_t*>(
      std::calloc(2ull * kv_regions * layout.region_elements(), sizeof(uint16_t))));
  if (!kv) throw std::bad_alloc();
}

}  // namespace vkllm::runtime
