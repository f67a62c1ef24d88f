// The StepBackend of a model split by layers (SplitModel): one Vulkan backend per stage, each
// with its layers' weights and KV cache, and this one in front of them. It forwards each graph
// operation to the stage that owns the operation's weight or layer (the embedding lookup to the
// first, the output norm and LM head to the last, the rest to the stage whose layer runs), and
// where the graph moves on to the next stage it ends the current stage's part of the step (its
// commands run and are waited for) and starts the next one's with the residual stream (Act::X of
// the step's tokens) copied through host-visible memory. The stages run one after another within
// a step; every stage gets the step's batch metadata (its layers attend over the same block
// tables: the block pool is shared, each stage holds every block for its own layers).
#pragma once

#include <memory>
#include <vector>

#include "engine/runtime/runner.h"
#include "engine/runtime/split_model.h"
#include "engine/runtime/step_backend.h"

namespace vkllm::runtime {

// `opt` comes with the Runner's limits filled in; like make_vulkan_backend, it lowers them to what
// every stage holds. The stages share one KV block count: with kv_budget_bytes, each stage gets
// its layers' share of it; without, each as many blocks as the stage with the fewest holds.
std::unique_ptr<StepBackend> make_split_backend(const SplitModel& model, RunnerOptions& opt);

// One Vulkan backend per stage (or row shard) of `model`, stage i made with opts[i]; those that
// hold more KV blocks than the one with the fewest are made again with that many, so one block
// pool serves them all. Throws std::runtime_error where that fails.
std::vector<std::unique_ptr<StepBackend>> make_stage_backends(const SplitModel& model,
                                                              std::vector<RunnerOptions> opts);

}  // namespace vkllm::runtime
