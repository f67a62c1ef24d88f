// The seam between ModelManager's policy (which models stay loaded, when they go, whether a new
// one fits and what must make room for it) and the loading of one model, as Ollama's sched.go
// takes newServerFn and getGpuFn: the server uses the engine loader (engine_model_loader.h),
// and unit tests give the manager a loader of their own, with no engine and no GPU.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "registry/model_store.h"

namespace vkllm::sched {

struct LoadedModel;

// What a model needs before any of it is loaded.
struct ModelFootprint {
  uint64_t need_bytes = 0;  // at least: weights, activations and the KV of a minimal context
  uint64_t heap_bytes = 0;  // all the memory where it would run (the device's, or the system's)
  bool host = false;        // runs from system memory (the CPU backend)
};

// A load between reading its footprint and building its engine: the manager decides whether and
// when it proceeds, and with how much memory.
class PendingLoad {
 public:
  virtual ~PendingLoad() = default;
  virtual const ModelFootprint& footprint() const = 0;
  // Builds the model with `free_bytes` of memory available to it (its KV cache is sized from
  // it). Blocking (seconds). Throws http::StatusError.
  virtual std::shared_ptr<LoadedModel> finish(uint64_t free_bytes) = 0;
};

class ModelLoader {
 public:
  virtual ~ModelLoader() = default;
  // Where models run, for the log.
  virtual std::string describe() const = 0;
  // Reads what the model needs (its header, the device); takes no memory. Throws http::StatusError.
  virtual std::unique_ptr<PendingLoad> prepare(const registry::ModelShow& show) = 0;
  // Memory a new model may take now, next to the `loaded` ones: the device's (`host` false) or
  // the system's. Called with the manager's mutex held.
  virtual uint64_t free_bytes(
      bool host, const std::map<std::string, std::shared_ptr<LoadedModel>>& loaded) = 0;
  // A model's device was lost: the next load starts on a fresh device.
  virtual void forget_device() = 0;
};

}  // namespace vkllm::sched
