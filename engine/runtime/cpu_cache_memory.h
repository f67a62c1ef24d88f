// The CPU backend's cache memory: the paged K/V regions, the recurrent states of hybrid models
// and their checkpoints, sized once from the model and the Runner's options.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/kv/kv_layout.h"
#include "engine/kv/state_layout.h"
#include "engine/model/model_spec.h"
#include "engine/runtime/host_array.h"
#include "engine/runtime/runner.h"

namespace vkllm::runtime {

struct CpuCacheMemory {
  // Sizes the cache: kv_scratch_blocks when set (one K/V region shared by every layer), else the
  // KV budget (or, without one, every sequence at full context within half the memory the
  // system has available), less the recurrent states and their checkpoints' share.
  CpuCacheMemory(const model::ModelSpec& spec, const RunnerOptions& o);

  // Layer `layer`'s K (or V) region. With kv_scratch_blocks every layer shares the first pair.
  // Otherwise the layers that own K/V (ModelSpec::owns_kv) have a pair each, in layer order; a
  // Gemma 3n shared layer reads the pair of the layer it shares, a recurrent layer has none.
  uint16_t* region(uint32_t layer, bool value) const {
    const uint32_t i = scratch ? 0 : kv_region_of[layer];
    return kv.get() + (2ull * i + (value ? 1 : 0)) * layout.region_elements();
  }
  // Bytes of K/V, states and checkpoints.
  uint64_t bytes() const {
    return 2ull * kv_regions * layout.region_bytes() + states.bytes() +
           4 * states.slot_floats * n_checkpoints;
  }

  kv::KvLayout layout;
  std::unique_ptr<uint16_t[], FreeBytes> kv;
  uint32_t kv_regions = 0;             // K and V region pairs
  std::vector<uint32_t> kv_region_of;  // per layer: its pair (attention layers only)
  bool scratch = false;                // RunnerOptions::kv_scratch_blocks set
  kv::StateLayout states;              // one slot per sequence, zero until written
  std::unique_ptr<float[], FreeBytes> state_data;
  uint32_t n_checkpoints = 0;  // state checkpoints (kv::StateCheckpoints), beside the states
  std::unique_ptr<float[], FreeBytes> checkpoint_data;
};

}  // namespace vkllm::runtime
