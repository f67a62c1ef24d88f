#include "server/scheduler/model_manager.h"

#include <algorithm>
#include <cstdlib>
#include <future>
#include <iostream>

#include "engine/kv/kv_cache_type.h"
#include "engine/model/lora_adapter.h"
#include "engine/model/model_spec.h"
#include "engine/runtime/lora_merge.h"
#include "engine/vulkan/vk_error.h"
#include "server/scheduler/blob_model_source.h"
#include "server/scheduler/go_duration.h"
#include "server/scheduler/host_memory.h"
#include "server/scheduler/metrics.h"

namespace vkllm::sched {

namespace {

using namespace std::chrono;
constexpr uint64_t kGiB = uint64_t{1} << 30;

std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / double(kGiB));
  return buf;
}

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
    : store_(store), options_(std::move(options)), device_(choose_device(options_.device)) {
  device_.spread = options_.spread;
  std::cerr << "vkllm: models run on " << device_.describe() << "\n";
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

// One instance per weights, adapter and draft model: a model with an adapter never shares its
// base's, one with a draft (loaded unless speculation is off) not the same weights' without.
std::string ModelManager::instance_key(const registry::ModelShow& show) const {
  std::string key = show.model_blob->str();
  for (const auto& adapter : show.adapters) key += "+" + adapter.str();
  if (show.draft && options_.speculation.mode != SpeculationMode::off) {
    key += "+draft:" + show.draft->str();
  }
  return key;
}

model::LoraAdapter ModelManager::read_lora_adapter(const registry::Digest& digest) const {
  store_.blobs().verify(digest);  // a raw blob changed on disk fails here, as the weights do
  auto reader = store_.blobs().open(digest);
  std::vector<uint8_t> bytes(reader.size());
  if (reader.read_at(0, std::as_writable_bytes(std::span(bytes))) != bytes.size()) {
    throw std::runtime_error("adapter blob " + digest.str() + " ends early");
  }
  return model::LoraAdapter::from_bytes(std::move(bytes));
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
  if (found.scheduler ? found.scheduler->healthy() : found.embeddings->healthy()) return it->second;
  // Its device was lost: forget it (requests still on it hold it until they end) and reload on
  // a fresh device.
  std::cerr << "vkllm: reloading " << it->second->show.name.display()
            << " after an engine failure\n";
  metrics().forget("vkllm_model_device_bytes", {"model", it->second->show.name.display()});
  metrics().forget("vkllm_model_device_bytes_by_device",
                   {"model", it->second->show.name.display()});
  loaded_.erase(it);
  contexts_.clear();
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
  const auto t0 = steady_clock::now();
  auto m = std::make_shared<LoadedModel>();
  m->key = instance_key(show);
  m->show = show;
  const std::string name = show.name.display();
  try {
    m->header =
        std::make_unique<gguf::GgufFile>(read_gguf_header(store_.blobs(), *show.model_blob));
  } catch (const std::exception& e) {
    throw http::StatusError(500, "cannot read the model file: " + std::string(e.what()));
  }
  // A LoRA adapter is merged into the weights as they load (engine/runtime/lora_merge.h): the
  // model then loads with the merged header, whose adapted quantized weights are F16.
  std::optional<model::LoraAdapter> adapter;
  std::unique_ptr<gguf::GgufFile> base_header;
  if (!show.adapters.empty()) {
    try {
      adapter.emplace(read_lora_adapter(show.adapters.front()));
      base_header = std::move(m->header);
      m->header =
          std::make_unique<gguf::GgufFile>(runtime::lora_merged_header(*base_header, *adapter, {}));
    } catch (const std::exception& e) {
      throw http::StatusError(500, "cannot apply the adapter of " + name + ": " + e.what());
    }
  }
  model::ModelSpec spec;
  try {
    spec = model::ModelSpec::from_gguf(*m->header);
    m->tokenizer = tokenizer::Tokenizer::from_gguf(*m->header);
  } catch (const std::exception& e) {
    throw http::StatusError(500, "cannot load " + name + ": " + e.what());
  }
  // What the model needs: weights, activations (estimated from the runner's buffers) and KV.
  uint64_t weight_bytes = 0;
  for (const auto& t : m->header->tensors()) weight_bytes += t.byte_size;
  m->weight_bytes = weight_bytes;
  // OLLAMA_KV_CACHE_TYPE where the model's head rows fit its blocks of 32, else f16 (as Ollama
  // falls back for models that cannot use a quantized cache).
  kv::CacheType kv_type = options_.runner.kv_cache_type;
  if (!kv::cache_type_fits(kv_type, spec.head_dim) ||
      !kv::cache_type_fits(kv_type, spec.head_dim_v)) {
    std::cerr << "vkllm: " << name << ": head dimension " << spec.head_dim
              << " is not a multiple of 32, using an f16 KV cache instead of "
              << kv::cache_type_name(kv_type) << "\n";
    kv_type = kv::CacheType::F16;
  }
  // K and V bytes of one token of context in every layer.
  const uint64_t per_token_kv =
      2ull * spec.n_layer * spec.n_head_kv * kv::row_bytes(kv_type, spec.head_dim);
  const uint64_t act_estimate = 4ull * (512ull * (8ull * spec.n_embd + 4ull * spec.n_ff) +
                                        64ull * (2ull * spec.n_embd + 2ull * spec.n_vocab)) +
                                (64ull << 20);

  // Every model runs on the chosen backend: on the CPU backend, embedding and rerank models too.
  const bool host = device_.backend == Backend::Cpu;
  std::vector<std::shared_ptr<vk::Context>> contexts;
  if (!host) contexts = vulkan_contexts();
  // With several devices, a decoder is split by layers across them under OLLAMA_SCHED_SPREAD or
  // when it does not fit on the first (weights, activations and 2048 tokens of KV); embedding
  // models (small, an encoder graph without stages) and LoRA-adapted ones stay on the first.
  bool split =
      !host && !spec.has_pooling_type && !adapter &&
      device_.splits(weight_bytes + act_estimate + options_.gpu_overhead + per_token_kv * 2048,
                     contexts.front()->device().memory_budget().budget);
  // Each device takes one layer at least: a model of fewer layers uses the first ones.
  if (split && contexts.size() > spec.n_layer) {
    contexts.resize(std::max<size_t>(spec.n_layer, 1));
    split = contexts.size() > 1;
  }
  if (!host) {
    if (!split) contexts.resize(1);
    m->context = contexts.front();
    m->more_contexts.assign(contexts.begin() + 1, contexts.end());
  }
  m->host_backend = host;
  m->on_cpu = host || m->context->caps().is_cpu();
  std::string device_name = host ? "the CPU" : m->context->caps().name;
  for (size_t i = 1; i < contexts.size(); ++i) device_name += " + " + contexts[i]->caps().name;
  const HostMemory system = host ? read_host_memory() : HostMemory{};

  // A draft model runs beside the target (unless speculation is off): its weights, activations
  // and a KV cache for as many tokens count with the target's.
  const bool with_draft =
      show.draft && !spec.has_pooling_type && options_.speculation.mode != SpeculationMode::off;
  const DraftCost draft_cost = with_draft ? read_draft(*m, *show.draft) : DraftCost{};
  const uint32_t trained = spec.n_ctx_train ? spec.n_ctx_train : 2048;
  uint32_t ctx_default = options_.default_num_ctx;
  if (ctx_default == 0) {
    // Ollama's tiers by device memory: 4k below 23 GiB, 32k below 47 GiB, else 256k; a CPU
    // device has no VRAM.
    uint64_t vram = 0;
    for (const auto& c : contexts) vram += m->on_cpu ? 0 : c->caps().device_local_bytes;
    ctx_default = vram < 23 * kGiB ? 4096 : vram < 47 * kGiB ? 32768 : 262144;
  }
  ctx_default = std::clamp<uint32_t>(ctx_default, 4, trained);
  m->default_num_ctx = ctx_default;

  runtime::RunnerOptions ro = options_.runner;
  ro.kv_cache_type = kv_type;
  ro.max_context = std::min<uint32_t>(std::max(trained, ctx_default), 262144);
  const uint32_t parallel_hint = std::max<uint32_t>(options_.num_parallel, 4);
  uint64_t heap = host ? system.total : 0;
  for (const auto& c : contexts) heap += c->device().memory_budget().budget;
  std::unique_lock lock(mutex_);
  // OLLAMA_GPU_OVERHEAD is VRAM kept free; system memory has no such reserve.
  const uint64_t fixed =
      weight_bytes + act_estimate + draft_cost.fixed + (host ? 0 : options_.gpu_overhead);
  const uint64_t min_kv =
      (per_token_kv + draft_cost.per_token_kv) * std::min<uint32_t>(ctx_default, 2048);
  if (fixed + min_kv > heap) {
    throw http::StatusError(500, "model requires more memory than the " +
                                     std::string(host ? "system" : "device") + " has: " + name +
                                     " needs " + gib(fixed + min_kv) + ", the " +
                                     (host ? "system" : "device") + " has " + gib(heap));
  }
  // Room for this model next to the others, evicting idle ones (least recently used first).
  if (loaded_.size() >= options_.max_loaded || free_bytes(host) < fixed + min_kv) {
    make_room(fixed + min_kv, host, lock);
  }
  const uint64_t free_now = free_bytes(host);
  if (host && free_now < fixed + min_kv) {
    // Other processes hold the memory: loading would swap or meet the OOM killer (Ollama's
    // words for the same refusal).
    throw http::StatusError(500, "model requires more system memory (" + gib(fixed + min_kv) +
                                     ") than is available (" + gib(free_now) + ")");
  }
  lock.unlock();
  if (ro.kv_budget_bytes == 0) {
    const uint64_t both_per_token = per_token_kv + draft_cost.per_token_kv;
    const uint64_t want = both_per_token * ctx_default * parallel_hint;
    uint64_t avail = free_now > fixed ? (free_now - fixed) / 10 * 9 : min_kv;
    if (m->on_cpu) avail = std::min(avail, heap / 8);  // system memory (CPU backend, lavapipe)
    // The target's share of the KV memory: the draft holds as many tokens.
    ro.kv_budget_bytes = std::max(min_kv, std::min(want, avail)) / both_per_token * per_token_kv;
  }
  const uint64_t kv_tokens = ro.kv_budget_bytes / std::max<uint64_t>(per_token_kv, 1);
  ro.max_seqs = options_.num_parallel
                    ? options_.num_parallel
                    : static_cast<uint32_t>(std::clamp<uint64_t>(kv_tokens / 256, 4, 64));
  ro.max_batch_tokens = std::max<uint32_t>(ro.max_batch_tokens, ro.max_seqs);
  // Speculative steps want logits after every drafted token: room for one sequence's full draft
  // beside a row for each of the others.
  const SpeculationOptions speculation =
      speculation_for(options_.speculation, m->on_cpu, with_draft);
  if (speculation.mode != SpeculationMode::off) {
    ro.max_logits_rows = std::max(ro.max_logits_rows, ro.max_seqs + speculation.draft_max);
  }

  // A raw blob is hashed against its digest beside the upload (once per process), so a file
  // changed on disk fails the load instead of answering with wrong weights.
  auto& blobs = store_.blobs();
  const registry::Digest blob = *show.model_blob;
  auto verified = std::async(std::launch::async, [&blobs, blob] { blobs.verify(blob); });
  try {
    const gguf::GgufFile& stored = base_header ? *base_header : *m->header;
    BlobTensorSource blob_source(store_.blobs().open(*show.model_blob), stored.data_offset());
    std::optional<runtime::LoraMergedSource> merged;
    if (adapter) merged.emplace(stored, *m->header, blob_source, *adapter);
    runtime::TensorDataSource& source =
        merged ? static_cast<runtime::TensorDataSource&>(*merged) : blob_source;
    if (split) {
      // Each device's layers in proportion to its free memory; each stage reads the blob afresh.
      std::vector<vk::Context*> devices;
      std::vector<uint64_t> free;
      for (const auto& c : contexts) {
        devices.push_back(c.get());
        const auto b = c->device().memory_budget();
        free.push_back(b.budget > b.usage ? b.budget - b.usage : 0);
      }
      const auto counts = runtime::split_layers(spec.n_layer, free);
      const registry::Digest digest = *show.model_blob;
      const uint64_t data_offset = stored.data_offset();
      m->split_model = std::make_unique<runtime::SplitModel>(
          devices, *m->header,
          [&](size_t) -> std::unique_ptr<runtime::TensorDataSource> {
            return std::make_unique<BlobTensorSource>(store_.blobs().open(digest), data_offset);
          },
          counts, options_.model);
      m->runner = std::make_unique<runtime::Runner>(*m->split_model, ro);
      const auto bytes = m->runner->device_bytes_by_device();
      for (size_t i = 0; i < bytes.size(); ++i)
        m->device_shares.emplace_back(device_.split_selectors[i], bytes[i]);
    } else if (host) {
      m->host_model = std::make_unique<runtime::HostModel>(*m->header, source);
      if (spec.has_pooling_type) {
        m->embeddings = std::make_unique<EmbeddingQueue>(*m->host_model, embedder_options());
      } else {
        m->runner = std::make_unique<runtime::Runner>(*m->host_model, ro);
      }
    } else {
      m->model = std::make_unique<runtime::Model>(*m->context, *m->header, source, options_.model);
      if (spec.has_pooling_type) {
        m->embeddings = std::make_unique<EmbeddingQueue>(*m->model, embedder_options());
      } else {
        m->runner = std::make_unique<runtime::Runner>(*m->model, ro);
      }
    }
  } catch (const std::bad_alloc&) {
    throw http::StatusError(500, "out of system memory loading " + name);
  } catch (const vk::VulkanError& e) {
    if (e.result() == VK_ERROR_OUT_OF_DEVICE_MEMORY || e.result() == VK_ERROR_OUT_OF_HOST_MEMORY) {
      throw http::StatusError(500, "out of device memory loading " + name + ": " + e.what());
    }
    throw http::StatusError(500, "cannot load " + name + ": " + e.what());
  } catch (const std::exception& e) {
    throw http::StatusError(500, "cannot load " + name + ": " + e.what());
  }
  try {
    verified.get();
  } catch (const std::exception& e) {
    throw http::StatusError(500, "cannot load " + name + ": " + e.what());
  }
  m->device_bytes = m->embeddings ? m->embeddings->device_bytes() : m->runner->device_bytes();
  if (with_draft) load_draft(*m, *show.draft, ro, kv_tokens);
  if (m->runner) {
    m->scheduler = std::make_unique<Scheduler>(
        *m->runner, *m->tokenizer,
        SchedulerOptions{0, 0, name, options_.fault_inject_step, speculation, m->drafter.get()});
  }
  m->load_duration = duration_cast<nanoseconds>(steady_clock::now() - t0);
  const double secs = duration<double>(m->load_duration).count();
  std::cerr << "vkllm: loaded " << name << " in " << secs << " s ("
            << double(weight_bytes) / secs / 1e9 << " GB/s of weights; " << gib(m->device_bytes)
            << " on " << device_name << ", KV " << kv_tokens << " tokens, " << ro.max_seqs
            << " parallel, num_ctx " << ctx_default << ")";
  if (m->drafter) std::cerr << "; draft model beside it";
  if (const auto& layout = m->header->translation(); layout.applied()) {
    std::cerr << "; " << layout.name << " layout read as llama.cpp's";
  }
  if (!m->device_shares.empty()) {
    std::cerr << "; layers split";
    for (size_t i = 0; i < m->split_model->num_stages(); ++i) {
      const auto& r = m->split_model->stage(i).layers();
      std::cerr << (i ? " + " : " ") << (r.end - r.first) << " on device "
                << m->device_shares[i].first;
    }
  }
  std::cerr << "\n";
  metrics().add("vkllm_model_loads_total", {{"model", name}});
  metrics().observe("vkllm_model_load_seconds", {{"model", name}}, secs);
  metrics().set("vkllm_model_device_bytes", {{"model", name}}, double(m->device_bytes));
  for (size_t i = 0; i < m->device_shares.size(); ++i) {
    metrics().set(
        "vkllm_model_device_bytes_by_device",
        {{"model", name}, {"stage", std::to_string(i)}, {"device", m->device_shares[i].first}},
        double(m->device_shares[i].second));
  }
  return m;
}

runtime::EmbedderOptions ModelManager::embedder_options() const {
  runtime::EmbedderOptions o;
  o.matvec_max_batch = options_.runner.matvec_max_batch;
  return o;
}

std::vector<std::shared_ptr<vk::Context>> ModelManager::vulkan_contexts() {
  std::lock_guard lock(mutex_);
  if (contexts_.empty()) {
    const size_t n = std::max<size_t>(1, device_.split_selectors.size());
    try {
      for (size_t i = 0; i < n; ++i) {
        contexts_.push_back(std::make_shared<vk::Context>(
            device_.vulkan_options(options_.vulkan, i), options_.pipeline_cache));
      }
    } catch (const std::exception& e) {
      contexts_.clear();
      throw http::StatusError(500, std::string("no usable Vulkan device: ") + e.what());
    }
  }
  return contexts_;
}

uint64_t ModelManager::free_bytes(bool host) const {
  if (host) {
    // Weights are copied in at load (resident, so MemAvailable counts them); KV and activations
    // may not be touched yet, so what they may still take is kept aside.
    uint64_t pending = 0;
    for (auto& [k, m] : loaded_) {
      if (m->host_backend && m->device_bytes > m->weight_bytes)
        pending += m->device_bytes - m->weight_bytes;
    }
    const uint64_t avail = read_host_memory().available;
    return avail > pending ? avail - pending : 0;
  }
  if (contexts_.empty()) return UINT64_MAX;
  // Over every device of a split (a model split across them takes from each).
  uint64_t free = 0, budget = 0;
  for (const auto& c : contexts_) {
    const auto mb = c->device().memory_budget();
    budget += mb.budget;
    // The driver's view: what this process (all our models included) may still allocate.
    if (c->caps().memory_budget) free += mb.budget > mb.usage ? mb.budget - mb.usage : 0;
  }
  if (contexts_.front()->caps().memory_budget) return free;
  uint64_t in_use = 0;
  for (auto& [k, m] : loaded_) in_use += m->device_bytes;
  return budget > in_use ? budget - in_use : 0;
}

void ModelManager::make_room(uint64_t need_bytes, bool host, std::unique_lock<std::mutex>& lock) {
  for (;;) {
    if (loaded_.size() < options_.max_loaded && free_bytes(host) >= need_bytes) return;
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
