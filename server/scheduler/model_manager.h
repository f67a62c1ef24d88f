// Models in memory. A request acquires a lease on the model its name resolves to; the first
// acquire loads it through the ModelLoader (model_loader.h; the server's is the engine loader,
// engine_model_loader.h: the backend device_choice.h picks, a decoder split by layers across
// several devices, a draft model beside its target), later ones reuse it, and concurrent first
// requests share one load. Instances are keyed by the model blob (and its LoRA adapter's, merged
// into the weights at load, its projector's, whose image encoder it runs, and its draft model's,
// loaded beside it), so two names for the same weights share one. keep_alive works as Ollama's:
// each request may set the instance's duration (sticky); when the last lease ends, the instance
// expires after that duration (0: at once, negative: never). Memory is accounted for: the loader's
// footprint of a model (weights + KV + activations) against the memory free where it runs; a model
// that does not fit evicts the least recently used idle model, and one that cannot fit even alone
// is refused with a clear error. A model whose device was lost is reloaded by the next request.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/lora_adapter.h"
#include "engine/runtime/host_model.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "engine/runtime/split_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/vulkan/context.h"
#include "registry/model_store.h"
#include "server/http/status_error.h"
#include "server/scheduler/device_choice.h"
#include "server/scheduler/embedding_jobs.h"
#include "server/scheduler/manager_options.h"
#include "server/scheduler/model_loader.h"
#include "server/scheduler/scheduler.h"

namespace vkllm::sched {

struct LoadedModel {
  std::shared_ptr<vk::Context> context;  // first: outlives everything built on it
  // A model split by layers across devices (DeviceChoice::split): the devices after `context`,
  // and the model's stages (`model` then stays empty).
  std::vector<std::shared_ptr<vk::Context>> more_contexts;
  std::string key;           // the model blob digest (+ the adapter's, the draft's)
  registry::ModelShow show;  // of the name that loaded it
  std::unique_ptr<gguf::GgufFile> header;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<runtime::Model> model;           // on Vulkan
  std::unique_ptr<runtime::HostModel> host_model;  // on the CPU backend
  std::unique_ptr<runtime::SplitModel> split_model;
  std::unique_ptr<runtime::Runner> runner;
  // The draft model (Ollama's DRAFT layer), or the model's own multi-token-prediction block,
  // loaded beside the target on the same backend where the model has one and speculation is not
  // off; declared before the scheduler that uses it.
  std::unique_ptr<gguf::GgufFile> draft_header;
  std::unique_ptr<runtime::Model> draft_model;           // on Vulkan
  std::unique_ptr<runtime::HostModel> draft_host_model;  // on the CPU backend
  std::unique_ptr<runtime::Runner> draft_runner;
  std::unique_ptr<Drafter> drafter;  // DraftModel, or MtpDrafter for the model's NextN block
  // A vision model's image encoder (its projector layer), declared before the scheduler that
  // runs it on the engine thread; null for a model without one.
  std::unique_ptr<ImageInputs> images;
  std::unique_ptr<Scheduler> scheduler;
  // Embedding models (a pooling type) get this instead of a runner and a scheduler.
  std::unique_ptr<EmbeddingQueue> embeddings;
  std::chrono::nanoseconds load_duration{0};
  uint64_t device_bytes = 0;  // weights + KV + activations
  // Split: each device's selector and its share of device_bytes, in stage order; else empty.
  std::vector<std::pair<std::string, uint64_t>> device_shares;
  uint64_t weight_bytes = 0;
  uint32_t default_num_ctx = 2048;  // the instance's num_ctx when a request names none
  bool on_cpu = false;              // CPU backend or a CPU Vulkan device (lavapipe): size_vram 0
  bool host_backend = false;        // the CPU backend: accounted against system memory

  // Guarded by the manager's mutex.
  std::chrono::nanoseconds keep_alive{0};
  std::chrono::system_clock::time_point expires_at;
  uint32_t leases = 0;
  std::chrono::steady_clock::time_point last_used;
  bool unload_when_idle = false;
};

class ModelManager;

// Keeps a model loaded while a request uses it.
class ModelLease {
 public:
  ModelLease() = default;
  ModelLease(ModelManager* manager, std::shared_ptr<LoadedModel> model, bool loaded_now)
      : manager_(manager), model_(std::move(model)), loaded_now_(loaded_now) {}
  ModelLease(ModelLease&& o) noexcept
      : manager_(o.manager_), model_(std::move(o.model_)), loaded_now_(o.loaded_now_) {}
  ModelLease& operator=(ModelLease&&) = delete;
  ~ModelLease();

  LoadedModel& operator*() const { return *model_; }
  LoadedModel* operator->() const { return model_.get(); }
  explicit operator bool() const { return model_ != nullptr; }
  bool loaded_now() const { return loaded_now_; }

 private:
  ModelManager* manager_ = nullptr;
  std::shared_ptr<LoadedModel> model_;
  bool loaded_now_ = false;
};

struct RunningModel {  // one /api/ps entry
  registry::ModelShow show;
  uint64_t size = 0;
  uint64_t size_vram = 0;
  std::chrono::system_clock::time_point expires_at;
  uint32_t context_length = 0;
  std::vector<std::pair<std::string, uint64_t>> devices;  // LoadedModel::device_shares
};

class ModelManager {
 public:
  // Loads models from `store` with the engine (engine_model_loader.h).
  ModelManager(registry::ModelStore& store, ManagerOptions options);
  // Loads models with `loader` (tests: a loader with no engine).
  ModelManager(ManagerOptions options, std::unique_ptr<ModelLoader> loader);
  ~ModelManager();  // unloads everything
  ModelManager(const ModelManager&) = delete;
  ModelManager& operator=(const ModelManager&) = delete;

  // Blocking (loads take seconds): call from a worker thread. keep_alive: the request's, if it
  // set one. Throws http::StatusError (the status the request fails with: 400 no weights, 500
  // cannot load or does not fit, 503 shutting down).
  ModelLease acquire(const registry::ModelShow& show,
                     std::optional<std::chrono::nanoseconds> keep_alive);
  // acquire() when the model is already loaded and healthy (never blocks on a load).
  std::optional<ModelLease> try_acquire(const registry::ModelShow& show,
                                        std::optional<std::chrono::nanoseconds> keep_alive);
  // The instance for this model blob if it is loaded (no load, no lease).
  std::shared_ptr<LoadedModel> find_loaded(const registry::ModelShow& show) const;
  // Ollama's unload request (keep_alive 0 with no prompt, `vkllm stop`): expires now and unloads
  // once idle. False when the model was not loaded.
  bool request_unload(const registry::ModelShow& show);

  std::vector<RunningModel> running() const;
  const ManagerOptions& options() const { return options_; }
  // Unloads every model (shutdown); waits for none: leases still out keep theirs alive.
  void unload_all();
  // Server shutdown: stops the engine thread of every instance still alive (loaded, or unloaded
  // and still held by a lease) and waits for it. Their sequences and embedding jobs end as
  // unavailable with `reason` (the requests answer 503), and no engine thread touches a request's
  // executor afterwards, so the I/O threads' io_context can go safely. Later requests get 503.
  void shutdown_engines(const std::string& reason);

 private:
  friend class ModelLease;
  void release(const std::shared_ptr<LoadedModel>& model);
  void take(LoadedModel& m, std::optional<std::chrono::nanoseconds> keep_alive);
  std::shared_ptr<LoadedModel> usable(const std::string& key);
  std::string instance_key(const registry::ModelShow& show) const;
  // The loader's footprint of the model against the memory free (making room, or refusing),
  // then the loader builds it. mutex_ not held; load_mutex_ held.
  std::shared_ptr<LoadedModel> load(const registry::ModelShow& show);
  void make_room(uint64_t need_bytes, bool host, std::unique_lock<std::mutex>& lock);
  void reaper();
  void unload_locked(const std::string& key);
  std::chrono::system_clock::time_point expiry(std::chrono::nanoseconds keep_alive) const;

  ManagerOptions options_;
  std::unique_ptr<ModelLoader> loader_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;  // a model became idle, was unloaded, or a load finished
  std::map<std::string, std::shared_ptr<LoadedModel>> loaded_;
  // Every instance made, to reach those unloaded while leases still hold them (shutdown).
  std::vector<std::weak_ptr<LoadedModel>> instances_;
  std::mutex load_mutex_;  // one load at a time, as Ollama
  bool stopping_ = false;
  std::thread reaper_;
};

}  // namespace vkllm::sched
