#include "server/scheduler/model_manager.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "server/scheduler/engine_model_loader.h"
#include "server/scheduler/go_duration.h"
#include "server/scheduler/host_memory.h"
#include "server/scheduler/metrics.h"

namespace vkllm::sched {

namespace {

using namespace std::chrono;
}  // namespace

std::chrono::nanoseconds parse_keep_alive_env(std::string_view text) {
  // A bare integer is seconds (Ollama's env rule); anything else a Go duration.
  const std::string s(text);
  char* end = nullptr;
  const long long secs = std::strtoll(s.c_str(), &end, 10);
  if (!s.empty() && *end == '\0') return seconds(secs);
  return parse_go_duration(text);
}

ModelLease::~ModelLease() {
  if (manager_ && model_) manager_->release(model_);
}

ModelManager::ModelManager(registry::ModelStore& store, ManagerOptions options)
    : ModelManager(options, std::make_unique<EngineModelLoader>(store, options)) {}

ModelManager::ModelManager(ManagerOptions options, std::unique_ptr<ModelLoader> loader)
    : options_(std::move(options)), loader_(std::move(loader)) {
  std::cerr << "vkllm: models run on " << loader_->describe() << "\n";
  reaper_ = std::thread([this] { reaper(); });
}

ModelManager::~ModelManager() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (reaper_.joinable()) reaper_.join();
  unload_all();
}

system_clock::time_point ModelManager::expiry(nanoseconds keep_alive) const {
  // Negative or beyond ~200 years (where time_point arithmetic would overflow) is forever.
  constexpr auto forever = hours(24 * 365 * 200);
  if (keep_alive < nanoseconds(0) || keep_alive > forever) return system_clock::now() + forever;
  return system_clock::now() + duration_cast<system_clock::duration>(keep_alive);
}

// One instance per weights, adapter, projector and draft model: a model with an adapter never
// shares its base's, one with a projector not the same weights' without (whose instance has no
// image encoder), one with a draft (loaded unless speculation is off) not the same weights'
// without.
std::string ModelManager::instance_key(const registry::ModelShow& show) const {
  std::string key = show.model_blob->str();
  for (const auto& adapter : show.adapters) key += "+" + adapter.str();
  for (const auto& projector : show.projectors) key += "+projector:" + projector.str();
  if (show.draft && options_.speculation.mode != SpeculationMode::off) {
    key += "+draft:" + show.draft->str();
  }
  return key;
}

std::shared_ptr<LoadedModel> ModelManager::find_loaded(const registry::ModelShow& show) const {
  if (!show.model_blob) return nullptr;
  std::lock_guard lock(mutex_);
  auto it = loaded_.find(instance_key(show));
  return it == loaded_.end() ? nullptr : it->second;
}

void ModelManager::take(LoadedModel& m, std::optional<nanoseconds> keep_alive) {
  ++m.leases;
  if (keep_alive) m.keep_alive = *keep_alive;
  m.unload_when_idle = false;
  m.last_used = steady_clock::now();
  m.expires_at = expiry(m.keep_alive);
}

std::shared_ptr<LoadedModel> ModelManager::usable(const std::string& key) {
  auto it = loaded_.find(key);
  if (it == loaded_.end()) return nullptr;
  const auto& found = *it->second;
  const bool healthy = found.scheduler    ? found.scheduler->healthy()
                       : found.embeddings ? found.embeddings->healthy()
                                          : true;
  if (healthy) return it->second;
  // Its device was lost: forget it (requests still on it hold it until they end) and reload on
  // a fresh device.
  std::cerr << "vkllm: reloading " << it->second->show.name.display()
            << " after an engine failure\n";
  metrics().forget("vkllm_model_device_bytes", {"model", it->second->show.name.display()});
  metrics().forget("vkllm_model_device_bytes_by_device",
                   {"model", it->second->show.name.display()});
  loaded_.erase(it);
  loader_->forget_device();
  return nullptr;
}

std::optional<ModelLease> ModelManager::try_acquire(const registry::ModelShow& show,
                                                    std::optional<nanoseconds> keep_alive) {
  if (!show.model_blob) return std::nullopt;
  std::lock_guard lock(mutex_);
  if (stopping_) return std::nullopt;
  auto m = usable(instance_key(show));
  if (!m) return std::nullopt;
  take(*m, keep_alive);
  return ModelLease(this, m, false);
}

ModelLease ModelManager::acquire(const registry::ModelShow& show,
                                 std::optional<nanoseconds> keep_alive) {
  if (!show.model_blob) throw http::StatusError(400, "model has no weights layer");
  const std::string key = instance_key(show);
  {
    std::lock_guard lock(mutex_);
    if (stopping_) throw http::StatusError(503, "server is shutting down");
    if (auto m = usable(key)) {
      take(*m, keep_alive);
      return ModelLease(this, m, false);
    }
  }
  std::lock_guard load_lock(load_mutex_);  // one load at a time, as Ollama
  {
    std::lock_guard lock(mutex_);
    if (auto m = usable(key)) {  // loaded by another request while this one waited
      take(*m, keep_alive);
      return ModelLease(this, m, false);
    }
  }
  auto m = load(show);
  std::unique_lock lock(mutex_);
  if (stopping_) {  // shutdown_engines() ran during the load: this instance never serves
    lock.unlock();
    if (m->scheduler) m->scheduler->shutdown("server is shutting down");
    if (m->embeddings) m->embeddings->shutdown("server is shutting down");
    throw http::StatusError(503, "server is shutting down");
  }
  m->keep_alive = options_.default_keep_alive;
  take(*m, keep_alive);
  loaded_[key] = m;
  std::erase_if(instances_, [](const auto& w) { return w.expired(); });
  instances_.push_back(m);
  changed_.notify_all();
  return ModelLease(this, m, true);
}

std::shared_ptr<LoadedModel> ModelManager::load(const registry::ModelShow& show) {
  auto pending = loader_->prepare(show);
  const ModelFootprint& fp = pending->footprint();
  const std::string name = show.name.display();
  const char* where = fp.host ? "system" : "device";
  uint64_t free_now = 0;
  {
    std::unique_lock lock(mutex_);
    if (fp.need_bytes > fp.heap_bytes) {
      throw http::StatusError(500, "model requires more memory than the " + std::string(where) +
                                       " has: " + name + " needs " + gib_text(fp.need_bytes) +
                                       ", the " + where + " has " + gib_text(fp.heap_bytes));
    }
    // Room for this model next to the others, evicting idle ones (least recently used first).
    if (loaded_.size() >= options_.max_loaded ||
        loader_->free_bytes(fp.host, loaded_) < fp.need_bytes) {
      make_room(fp.need_bytes, fp.host, lock);
    }
    free_now = loader_->free_bytes(fp.host, loaded_);
    if (fp.host && free_now < fp.need_bytes) {
      // Other processes hold the memory: loading would swap or meet the OOM killer (Ollama's
      // words for the same refusal).
      throw http::StatusError(500, "model requires more system memory (" + gib_text(fp.need_bytes) +
                                       ") than is available (" + gib_text(free_now) + ")");
    }
  }
  auto m = pending->finish(free_now);
  m->key = instance_key(show);
  m->show = show;
  return m;
}

void ModelManager::make_room(uint64_t need_bytes, bool host, std::unique_lock<std::mutex>& lock) {
  for (;;) {
    if (loaded_.size() < options_.max_loaded && loader_->free_bytes(host, loaded_) >= need_bytes) {
      return;
    }
    if (loaded_.empty()) return;
    // The least recently used idle model goes; if all are busy, wait for one to become idle.
    std::shared_ptr<LoadedModel> victim;
    for (auto& [k, m] : loaded_) {
      if (m->leases == 0 && (!victim || m->last_used < victim->last_used)) victim = m;
    }
    if (victim) {
      std::cerr << "vkllm: unloading " << victim->show.name.display() << " to make room\n";
      unload_locked(victim->key);
      continue;
    }
    if (stopping_) throw http::StatusError(503, "server is shutting down");
    changed_.wait(lock);
  }
}

void ModelManager::unload_locked(const std::string& key) {
  auto it = loaded_.find(key);
  if (it == loaded_.end()) return;
  auto m = std::move(it->second);
  loaded_.erase(it);
  metrics().forget("vkllm_model_device_bytes", {"model", m->show.name.display()});
  metrics().forget("vkllm_model_device_bytes_by_device", {"model", m->show.name.display()});
  metrics().forget("vkllm_kv_blocks", {"model", m->show.name.display()});
  metrics().forget("vkllm_state_checkpoints", {"model", m->show.name.display()});
  metrics().forget("vkllm_running_sequences", {"model", m->show.name.display()});
  metrics().forget("vkllm_queued_requests", {"model", m->show.name.display()});
  // Destroying the scheduler joins its engine thread; no lease refers to an idle model.
  m.reset();
  changed_.notify_all();
}

void ModelManager::release(const std::shared_ptr<LoadedModel>& model) {
  {
    std::lock_guard lock(mutex_);
    if (model->leases > 0) --model->leases;
    model->last_used = steady_clock::now();
    model->expires_at = model->unload_when_idle ? system_clock::now() : expiry(model->keep_alive);
  }
  changed_.notify_all();
}

bool ModelManager::request_unload(const registry::ModelShow& show) {
  if (!show.model_blob) return false;
  {
    std::lock_guard lock(mutex_);
    auto it = loaded_.find(instance_key(show));
    if (it == loaded_.end()) return false;
    it->second->unload_when_idle = true;
    it->second->keep_alive = nanoseconds(0);
    it->second->expires_at = system_clock::now();
  }
  changed_.notify_all();
  return true;
}

void ModelManager::reaper() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    auto next = system_clock::time_point::max();
    const auto now = system_clock::now();
    std::vector<std::string> expired;
    for (auto& [key, m] : loaded_) {
      if (m->leases > 0) continue;
      const bool forever = m->keep_alive < nanoseconds(0) && !m->unload_when_idle;
      if (forever) continue;
      if (m->unload_when_idle || m->expires_at <= now) {
        expired.push_back(key);
      } else {
        next = std::min(next, m->expires_at);
      }
    }
    for (const auto& key : expired) unload_locked(key);
    if (!expired.empty()) continue;
    if (next == system_clock::time_point::max()) {
      changed_.wait(lock);
    } else {
      changed_.wait_until(lock, next);
    }
  }
}

std::vector<RunningModel> ModelManager::running() const {
  std::lock_guard lock(mutex_);
  std::vector<RunningModel> out;
  for (auto& [key, m] : loaded_) {
    RunningModel r;
    r.show = m->show;
    r.size = m->device_bytes;
    r.size_vram = m->on_cpu ? 0 : m->device_bytes;
    r.devices = m->device_shares;
    r.expires_at =
        m->leases > 0 && m->keep_alive >= nanoseconds(0) ? expiry(m->keep_alive) : m->expires_at;
    r.context_length = m->default_num_ctx;
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.expires_at > b.expires_at; });
  return out;
}

void ModelManager::shutdown_engines(const std::string& reason) {
  std::vector<std::shared_ptr<LoadedModel>> alive;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;  // loads and acquires from now on answer 503
    for (const auto& w : instances_) {
      if (auto m = w.lock()) alive.push_back(std::move(m));
    }
  }
  changed_.notify_all();
  // Outside the mutex: a stopping engine thread finishes sequences, which never calls back in.
  for (const auto& m : alive) {
    if (m->scheduler) m->scheduler->shutdown(reason);
    if (m->embeddings) m->embeddings->shutdown(reason);
  }
}

void ModelManager::unload_all() {
  std::lock_guard lock(mutex_);
  std::vector<std::string> keys;
  for (auto& [key, m] : loaded_) keys.push_back(key);
  for (const auto& key : keys) unload_locked(key);
}

}  // namespace vkllm::sched
