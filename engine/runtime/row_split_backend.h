// The StepBackend of a model split by rows (SplitModel in SplitMode::Row, row_split.h): one Vulkan
// backend per device, each over its share of every layer (its heads, their KV cache, its FFN
// rows), and this one in front of them. The graph runs on a device's share (SplitModel::spec()),
// so every operation goes to every device as it is, except:
// - the residual products (the output projection and the FFN down product, which add into X):
//   device 0 adds its partial sum into X, the others write theirs to H; the first operation that
//   reads X after them ends every device's part of the step (all submitted, then waited for),
//   the host adds device 0's X and the others' partials in device order, and each device that
//   runs on starts a new part with the sum in X (through host-visible memory): two round trips
//   per layer;
// - the output rows, the output norm, the LM head and what reads the logits run on device 0.
// Every device gets the step's batch metadata and token ids; the block pool is shared (each
// device holds every block for its own KV heads).
#pragma once

#include <memory>

#include "engine/runtime/runner.h"
#include "engine/runtime/split_model.h"
#include "engine/runtime/step_backend.h"

namespace vkllm::runtime {

// As make_split_backend: `opt` comes with the Runner's limits and is lowered to what every device
// holds; the devices hold the same KV blocks (with kv_budget_bytes, each 1/N of it).
std::unique_ptr<StepBackend> make_row_split_backend(const SplitModel& model, RunnerOptions& opt);

}  // namespace vkllm::runtime
