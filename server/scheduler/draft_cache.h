// The per-sequence KV caches of a drafter with a model of its own (DraftModel's draft model,
// MtpDrafter's NextN block): a map from sequence id to a state holding a kv::BlockTable `table`
// and the drafting round it was last used in (`last_used`).
#pragma once

#include <cstdint>

namespace vkllm::sched {

// Room for `n` more tokens in `state`'s table; where its pool is full, the least recently used
// sequences not used in round `now` give their caches back (they start over from the prefix
// cache when they draft again). False when no such sequence is left.
template <class States, class State>
bool reserve_evicting_idle(States& states, State& state, uint32_t n, uint64_t now) {
  for (;;) {
    if (state.table.reserve(n)) return true;
    auto victim = states.end();
    for (auto it = states.begin(); it != states.end(); ++it) {
      if (it->second->last_used == now) continue;
      if (victim == states.end() || it->second->last_used < victim->second->last_used) victim = it;
    }
    if (victim == states.end()) return false;
    states.erase(victim);
  }
}

}  // namespace vkllm::sched
