// The models a replica must hold before it takes traffic (VKLLM_PRELOAD). A thread of its own
// pulls each one its store lacks (through the registry pull the server's /api/pull uses), loads
// it and pins it: the pin is a lease held for the life of the server, so keep_alive, `vkllm
// stop` and memory pressure never unload a preloaded model. Failures (registry not up yet,
// model not pushed yet, load errors) are logged and retried with a backoff up to 30 s, so a
// fresh replica becomes ready by itself once its registry has the model; a pinned model whose
// engine failed (device lost) is released and loaded again. /readyz reads status().
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "registry/model_name.h"
#include "registry/model_store.h"
#include "server/scheduler/model_manager.h"

namespace vkllm::sched {

struct PreloadTiming {  // retry backoff: doubles from `first` to `max`; pins re-checked every
                        // `check`
  std::chrono::milliseconds first{1000}, max{30000}, check{5000};
};

class Preloader {
 public:
  // Fetches a model into the store; throws on failure, returns early when `stop` fires.
  using PullFn = std::function<void(const registry::ModelName&, std::stop_token stop)>;
  using LogFn = std::function<void(const std::string& line)>;

  struct Status {
    size_t wanted = 0;           // models named in VKLLM_PRELOAD
    size_t loaded = 0;           // pinned, with a healthy engine
    size_t failed_attempts = 0;  // attempts failed since the last success (0 while all is well)
    bool ready() const { return loaded == wanted; }
  };

  // Starts the thread at once (nothing to do when `names` is empty).
  Preloader(registry::ModelStore& store, ModelManager& models,
            std::vector<registry::ModelName> names, PullFn pull, LogFn log,
            PreloadTiming timing = {});
  ~Preloader();  // stop()
  Preloader(const Preloader&) = delete;
  Preloader& operator=(const Preloader&) = delete;

  Status status() const;
  // Cancels a pull in progress (a load in progress runs to its end), joins the thread and
  // releases the pins, so the manager can unload the models. Idempotent.
  void stop();

 private:
  void run(std::stop_token stop);
  // Pulls the model when the store lacks it, loads it and pins it. Throws on failure.
  void ensure(size_t index, std::stop_token stop);
  bool pinned_and_healthy(size_t index) const;  // mutex_ held

  registry::ModelStore& store_;
  ModelManager& models_;
  const std::vector<registry::ModelName> names_;
  const PullFn pull_;
  const LogFn log_;
  const PreloadTiming timing_;

  mutable std::mutex mutex_;
  std::condition_variable_any wake_;
  std::vector<std::optional<ModelLease>> pins_;  // one per name
  size_t failed_attempts_ = 0;
  std::jthread thread_;  // last: starts after everything it reads exists
};

}  // namespace vkllm::sched
