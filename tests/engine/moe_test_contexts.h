// Vulkan contexts whose MoE thresholds send a test's steps down one expert path (the grouped
// GEMMs from a few pairs, or the grouped decode kernel always), one per threshold pair and
// process, like vk_context(), so suites that share a path share its device.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include "engine/vulkan/context.h"

namespace vkllm::test {

// `grouped_min_pairs`: MoE steps of at least this many (token, expert) pairs run the grouped
// GEMMs; `matvec_groups_min_pairs` (0: the device's default): from this many, smaller steps group
// them on the decode kernel.
inline vk::Context& moe_context(uint32_t grouped_min_pairs, uint32_t matvec_groups_min_pairs = 0) {
  static std::map<std::pair<uint32_t, uint32_t>, std::unique_ptr<vk::Context>> contexts;
  auto& c = contexts[{grouped_min_pairs, matvec_groups_min_pairs}];
  if (!c) {
    vk::DeviceOptions o;
    o.tuning.moe_grouped_min_pairs = grouped_min_pairs;
    o.tuning.moe_matvec_groups_min_pairs = matvec_groups_min_pairs;
    o.log_summary = false;
    c = std::make_unique<vk::Context>(o);
  }
  return *c;
}

// Every step on the grouped decode-kernel products (from 2 pairs, never the GEMMs).
inline vk::Context& grouped_matvec_context() {
  return moe_context(1u << 24, 2);
}

}  // namespace vkllm::test
