#include "server/scheduler/preloader.h"

#include <algorithm>
#include <exception>

namespace vkllm::sched {

namespace {
// Forever: a preloaded model shows as never expiring in /api/ps.
constexpr std::chrono::nanoseconds kPinnedKeepAlive{-1};

// Moves a pin out of its slot (a lease can be moved, not assigned).
std::optional<ModelLease> take_pin(std::optional<ModelLease>& slot) {
  std::optional<ModelLease> out;
  if (slot) out.emplace(std::move(*slot));
  slot.reset();
  return out;
}
}  // namespace

Preloader::Preloader(registry::ModelStore& store, ModelManager& models,
                     std::vector<registry::ModelName> names, PullFn pull, LogFn log,
                     PreloadTiming timing)
    : store_(store),
      models_(models),
      names_(std::move(names)),
      pull_(std::move(pull)),
      log_(std::move(log)),
      timing_(timing),
      pins_(names_.size()) {
  if (!names_.empty()) thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

Preloader::~Preloader() {
  stop();
}

void Preloader::stop() {
  if (thread_.joinable()) {
    thread_.request_stop();  // wakes the wait and cancels a pull through the token
    thread_.join();
  }
  std::vector<std::optional<ModelLease>> released;
  {
    std::lock_guard lock(mutex_);
    released.swap(pins_);
    pins_.resize(names_.size());
  }
  // The leases end here, outside mutex_ (their release takes the manager's lock).
}

Preloader::Status Preloader::status() const {
  std::lock_guard lock(mutex_);
  Status s;
  s.wanted = names_.size();
  for (size_t i = 0; i < names_.size(); ++i) s.loaded += pinned_and_healthy(i) ? 1 : 0;
  s.failed_attempts = failed_attempts_;
  return s;
}

bool Preloader::pinned_and_healthy(size_t i) const {
  const auto& pin = pins_[i];
  if (!pin) return false;
  const LoadedModel& m = **pin;
  return m.scheduler ? m.scheduler->healthy() : m.embeddings && m.embeddings->healthy();
}

void Preloader::ensure(size_t i, std::stop_token stop) {
  const registry::ModelName& name = names_[i];
  const std::string shown = name.display();
  if (!store_.find(name)) {
    log_("preload: pulling " + shown);
    pull_(name, stop);
    if (stop.stop_requested()) return;
    log_("preload: pulled " + shown);
  }
  const registry::ModelShow show = store_.show(name);
  ModelLease lease = models_.acquire(show, kPinnedKeepAlive);
  std::unique_lock lock(mutex_);
  std::optional<ModelLease> previous = take_pin(pins_[i]);
  pins_[i].emplace(std::move(lease));
  lock.unlock();
  previous.reset();  // outside mutex_: releasing takes the manager's lock
  log_("preload: " + shown + " loaded and pinned");
}

void Preloader::run(std::stop_token stop) {
  auto backoff = timing_.first;
  while (!stop.stop_requested()) {
    bool all_ready = true;
    for (size_t i = 0; i < names_.size() && !stop.stop_requested(); ++i) {
      {
        std::unique_lock lock(mutex_);
        if (pinned_and_healthy(i)) continue;
        // A pin whose engine failed: released (outside mutex_) and loaded again.
        std::optional<ModelLease> failed = take_pin(pins_[i]);
        lock.unlock();
        if (failed) log_("preload: " + names_[i].display() + " lost its engine; loading it again");
      }
      try {
        ensure(i, stop);
      } catch (const std::exception& e) {
        if (stop.stop_requested()) break;
        all_ready = false;
        std::lock_guard lock(mutex_);
        ++failed_attempts_;
        log_("preload: " + names_[i].display() + ": " + e.what() + " (retrying in " +
             std::to_string(backoff.count() / 1000.0).substr(0, 4) + " s)");
      }
    }
    if (all_ready) {
      std::lock_guard lock(mutex_);
      failed_attempts_ = 0;
    }
    const auto wait = all_ready ? timing_.check : backoff;
    backoff = all_ready ? timing_.first : std::min(backoff * 2, timing_.max);
    std::unique_lock lock(mutex_);
    wake_.wait_for(lock, stop, wait, [] { return false; });
  }
}

}  // namespace vkllm::sched
