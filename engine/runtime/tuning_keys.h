// The engine's tuning keys: `--tune key=value` on the engine commands (bench, perplexity,
// generate, debug logits) sets the parameters that measurements sweep, in RunnerOptions and in the
// Vulkan kernels' vk::KernelTuning. The defaults are the values that won (bench/RESULTS.md); a key
// lives only while a measurement needs it. Nothing here reads the environment.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "engine/runtime/runner.h"
#include "engine/vulkan/kernel_tuning.h"

namespace vkllm::runtime {

// What a key sets.
struct TuningTarget {
  RunnerOptions& runner;
  vk::KernelTuning& kernels;
};

struct TuningKey {
  std::string_view name;
  std::string_view default_value;  // as the user would write it ("auto": chosen per device)
  std::string_view description;
  // Parses `value` into the target; throws std::invalid_argument saying what it accepts.
  void (*apply)(TuningTarget& target, std::string_view value);
};

// Every key, in the order `--tune help` prints them.
std::span<const TuningKey> tuning_keys();

// Applies one "key=value"; throws std::invalid_argument naming an unknown key (and the known ones)
// or a value the key does not accept.
void apply_tuning(std::string_view assignment, TuningTarget target);

// One line per key: name, default, description.
std::string tuning_help();

}  // namespace vkllm::runtime
