// The StepBackend of the CPU: activations and the paged KV cache (the same kv::KvLayout, f16) in
// host memory, each graph operation run at once by the engine/cpu kernels, split over one
// cpu::ThreadPool (shared by every CPU Runner unless RunnerOptions::cpu_threads gives one its
// own). Products quantize their shared input once per call (Q/K/V, gate/up).
#pragma once

#include <memory>

#include "engine/runtime/host_model.h"
#include "engine/runtime/runner.h"
#include "engine/runtime/step_backend.h"

namespace vkllm::runtime {

// `opt` comes with the Runner's limits filled in. The KV cache holds kv_budget_bytes, else
// VKLLM_KV_BUDGET (RunnerOptions::kv_budget_bytes), else enough for max_seqs
// sequences of max_context tokens, capped at half of the memory the system has available.
std::unique_ptr<StepBackend> make_cpu_backend(const HostModel& model, RunnerOptions& opt);

}  // namespace vkllm::runtime
