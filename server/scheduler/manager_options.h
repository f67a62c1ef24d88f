// How ModelManager loads and keeps models: Ollama's scheduling settings and the engine options
// every model starts from. Filled by the configuration module (server/config/settings.h).
#pragma once

#include <chrono>
#include <cstdint>

#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "engine/runtime/split_model.h"
#include "engine/vulkan/device.h"
#include "engine/vulkan/pipeline.h"
#include "server/scheduler/speculation.h"

namespace vkllm::sched {

struct ManagerOptions {
  std::chrono::nanoseconds default_keep_alive = std::chrono::minutes(5);  // OLLAMA_KEEP_ALIVE
  uint32_t max_loaded = 3;       // OLLAMA_MAX_LOADED_MODELS
  uint32_t num_parallel = 0;     // OLLAMA_NUM_PARALLEL (0: what memory allows, >= 4)
  uint32_t default_num_ctx = 0;  // OLLAMA_CONTEXT_LENGTH (0: by device memory, as Ollama)
  uint64_t gpu_overhead = 0;     // OLLAMA_GPU_OVERHEAD bytes kept free
  vk::DeviceRequest device;      // VKLLM_DEVICE: auto, cpu, vulkan[:N], a list N,M (split)
  bool spread = false;           // OLLAMA_SCHED_SPREAD: split models across every GPU
  // VKLLM_SPLIT_MODE: how a split model is shared out, by layers or by rows (row_split.h).
  runtime::SplitMode split_mode = runtime::SplitMode::Layer;
  // The engine options each model starts from (the manager sets context, sequences and, unless
  // VKLLM_KV_BUDGET did, the KV budget per model).
  runtime::RunnerOptions runner;
  runtime::ModelOptions model;
  vk::DeviceOptions vulkan;                 // the selector comes from `device`
  vk::PipelineCacheOptions pipeline_cache;  // empty dir: no on-disk cache
  long fault_inject_step = 0;               // VKLLM_FAULT_INJECT=device_lost@N (0: none)
  SpeculationOptions speculation;           // VKLLM_SPECULATIVE, VKLLM_DRAFT_MAX
};

// Parses a keep_alive as OLLAMA_KEEP_ALIVE is parsed: a Go duration ("5m", "1h30m", "-1s") or a
// bare number of seconds. Throws std::invalid_argument with Go's message.
std::chrono::nanoseconds parse_keep_alive_env(std::string_view text);

}  // namespace vkllm::sched
