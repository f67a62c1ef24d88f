#include "server/scheduler/engine_model_loader.h"

#include <algorithm>
#include <future>
#include <iostream>
#include <optional>

#include "engine/gguf/inline_projector.h"
#include "engine/kv/kv_cache_type.h"
#include "engine/model/model_spec.h"
#include "engine/model/nextn_head.h"
#include "engine/runtime/kv_footprint.h"
#include "engine/runtime/lora_merge.h"
#include "engine/vulkan/vk_error.h"
#include "server/scheduler/blob_model_source.h"
#include "server/scheduler/host_memory.h"
#include "server/scheduler/metrics.h"
#include "server/scheduler/model_manager.h"

namespace vkllm::sched {

namespace {

using namespace std::chrono;
}  // namespace

// One model between its header and its engine: what prepare() learnt, for finish().
class EngineModelLoader::Pending : public PendingLoad {
 public:
  Pending(EngineModelLoader& loader, const registry::ModelShow& show);
  const ModelFootprint& footprint() const override { return footprint_; }
  std::shared_ptr<LoadedModel> finish(uint64_t free_now) override;

 private:
  // Builds the model's engine (the split stages, the host model or the Vulkan model, and its
  // runner or embedding queue) with runner options `ro`.
  void build(const runtime::RunnerOptions& ro);
  // The image encoder of the model's projector layer (http::StatusError 500 naming why not).
  std::unique_ptr<ImageInputs> load_images(const LoadedModel& m) const;
  // A projector layer, or a tower inside the model's own file the encoders read.
  bool has_images() const { return !m_->show.projectors.empty() || inline_tower_.has_value(); }
  void log_loaded(uint64_t kv_tokens, uint32_t max_seqs) const;

  EngineModelLoader& loader_;
  const ManagerOptions& options_;
  steady_clock::time_point t0_ = steady_clock::now();
  std::shared_ptr<LoadedModel> m_ = std::make_shared<LoadedModel>();
  std::string name_;
  std::optional<model::LoraAdapter> adapter_;
  std::unique_ptr<gguf::GgufFile> base_header_;
  // The model file's header as stored, when it carries the vision tower itself (Ollama's
  // single-file layout, engine/gguf/inline_projector.h) and no projector layer comes with it.
  std::optional<gguf::GgufFile> inline_tower_;
  // The image encoder's weights (the projector layer's bytes, or the tower's tensors inside the
  // model file): held beside the model's while it is loaded, so counted with them.
  uint64_t projector_bytes_ = 0;
  model::ModelSpec spec_;
  kv::CacheType kv_type_{};
  uint64_t per_token_kv_ = 0;
  uint32_t trained_ = 0;
  std::vector<std::shared_ptr<vk::Context>> contexts_;  // empty on the CPU backend
  bool split_ = false;
  std::string device_name_;
  bool with_draft_ = false;
  bool with_mtp_ = false;                       // the draft is the model's own NextN block
  std::optional<registry::Digest> draft_blob_;  // the draft's (the model's own with_mtp_)
  DraftCost draft_cost_;
  uint64_t fixed_ = 0;
  uint64_t min_kv_ = 0;
  ModelFootprint footprint_;
};

EngineModelLoader::EngineModelLoader(registry::ModelStore& store, ManagerOptions options)
    : store_(store), options_(std::move(options)), device_(choose_device(options_.device)) {
  device_.spread = options_.spread;
  device_.by_rows = options_.split_mode == runtime::SplitMode::Row;
}

std::unique_ptr<PendingLoad> EngineModelLoader::prepare(const registry::ModelShow& show) {
  return std::make_unique<Pending>(*this, show);
}

EngineModelLoader::Pending::Pending(EngineModelLoader& loader, const registry::ModelShow& show)
    : loader_(loader), options_(loader.options_), name_(show.name.display()) {
  LoadedModel& m = *m_;
  m.show = show;
  try {
    m.header = std::make_unique<gguf::GgufFile>(
        read_gguf_header(loader_.store_.blobs(), *show.model_blob));
    // Only a file in Ollama's layout (translated on read) can carry its tower.
    if (show.projectors.empty() && m.header->translation().applied()) {
      gguf::GgufFile raw =
          read_gguf_header(loader_.store_.blobs(), *show.model_blob, gguf::ReadLayout::Raw);
      if (!gguf::inline_projector_arch(raw).empty()) inline_tower_.emplace(std::move(raw));
    }
  } catch (const std::exception& e) {
    throw http::StatusError(500, "cannot read the model file: " + std::string(e.what()));
  }
  // A LoRA adapter is merged into the weights as they load (engine/runtime/lora_merge.h): the
  // model then loads with the merged header, whose adapted quantized weights are F16.
  if (!show.adapters.empty()) {
    try {
      adapter_.emplace(loader_.read_lora_adapter(show.adapters.front()));
      base_header_ = std::move(m.header);
      m.header = std::make_unique<gguf::GgufFile>(
          runtime::lora_merged_header(*base_header_, *adapter_, {}));
    } catch (const std::exception& e) {
      throw http::StatusError(500, "cannot apply the adapter of " + name_ + ": " + e.what());
    }
  }
  try {
    spec_ = model::ModelSpec::from_gguf(*m.header);
    m.tokenizer = tokenizer::Tokenizer::from_gguf(*m.header);
  } catch (const std::exception& e) {
    throw http::StatusError(500, "cannot load " + name_ + ": " + e.what());
  }
  // What the model needs: weights, activations (estimated from the runner's buffers) and KV.
  uint64_t weight_bytes = 0;
  for (const auto& t : m.header->tensors()) weight_bytes += t.byte_size;
  m.weight_bytes = weight_bytes;
  if (inline_tower_) {
    for (const auto& t : inline_tower_->tensors())
      if (t.name.starts_with("v.") || t.name.starts_with("mm.")) projector_bytes_ += t.byte_size;
  } else if (!show.projectors.empty()) {
    if (const auto info = loader_.store_.blobs().info(show.projectors.front()))
      projector_bytes_ = info->size;
  }
  // OLLAMA_KV_CACHE_TYPE where the model's head rows fit its blocks of 32, else f16 (as Ollama
  // falls back for models that cannot use a quantized cache).
  kv_type_ = options_.runner.kv_cache_type;
  if (!kv::cache_type_fits(kv_type_, spec_.head_dim) ||
      !kv::cache_type_fits(kv_type_, spec_.head_dim_v)) {
    std::cerr << "vkllm: " << name_ << ": head dimension " << spec_.head_dim
              << " is not a multiple of 32, using an f16 KV cache instead of "
              << kv::cache_type_name(kv_type_) << "\n";
    kv_type_ = kv::CacheType::F16;
  }
  // K and V bytes of one token of context in every layer that owns a cache: the backends'
  // count (runtime/kv_footprint.h).
  per_token_kv_ = runtime::kv_bytes_per_token(spec_, kv_type_);
  const uint64_t act_estimate = 4ull * (512ull * (8ull * spec_.n_embd + 4ull * spec_.n_ff) +
                                        64ull * (2ull * spec_.n_embd + 2ull * spec_.n_vocab)) +
                                (64ull << 20);

  // Every model runs on the chosen backend: on the CPU backend, embedding and rerank models too.
  const DeviceChoice& device = loader_.device_;
  const bool host = device.backend == Backend::Cpu;
  if (!host) contexts_ = loader_.vulkan_contexts();
  // With several devices, a decoder is split across them (by layers, or by rows with
  // VKLLM_SPLIT_MODE=row) under OLLAMA_SCHED_SPREAD or when it does not fit on the first
  // (weights, activations and 2048 tokens of KV); embedding models (small, an encoder graph
  // without stages) and LoRA-adapted ones stay on the first.
  split_ = !host && !spec_.has_pooling_type && !adapter_ &&
           device.splits(weight_bytes + act_estimate + options_.gpu_overhead + per_token_kv_ * 2048,
                         contexts_.front()->device().memory_budget().budget);
  // Each device takes one layer at least: a model of fewer layers uses the first ones.
  if (split_ && options_.split_mode == runtime::SplitMode::Layer &&
      contexts_.size() > spec_.n_layer) {
    contexts_.resize(std::max<size_t>(spec_.n_layer, 1));
    split_ = contexts_.size() > 1;
  }
  if (!host) {
    if (!split_) contexts_.resize(1);
    m.context = contexts_.front();
    m.more_contexts.assign(contexts_.begin() + 1, contexts_.end());
  }
  m.host_backend = host;
  m.on_cpu = host || m.context->caps().is_cpu();
  device_name_ = host ? "the CPU" : m.context->caps().name;
  for (size_t i = 1; i < contexts_.size(); ++i) device_name_ += " + " + contexts_[i]->caps().name;
  const HostMemory system = host ? read_host_memory() : HostMemory{};

  // A draft model runs beside the target (unless speculation is off): its weights, activations
  // and a KV cache for as many tokens count with the target's.
  with_draft_ =
      show.draft && !spec_.has_pooling_type && options_.speculation.mode != SpeculationMode::off;
  // Else a model shipping a multi-token-prediction block drafts with it (one device: the block
  // reads every token's hidden state from the model's runner).
  with_mtp_ = !with_draft_ && model::nextn_block_count(*m.header) > 0 && !spec_.has_pooling_type &&
              !split_ && options_.speculation.mode != SpeculationMode::off;
  if (with_draft_ || with_mtp_) {
    draft_blob_ = with_mtp_ ? *show.model_blob : *show.draft;
    draft_cost_ = loader_.read_draft(m, *draft_blob_, /*nextn_head=*/with_mtp_);
  }
  trained_ = spec_.n_ctx_train ? spec_.n_ctx_train : 2048;
  uint32_t ctx_default = options_.default_num_ctx;
  if (ctx_default == 0) {
    // Ollama's tiers by device memory: 4k below 23 GiB, 32k below 47 GiB, else 256k; a CPU
    // device has no VRAM.
    uint64_t vram = 0;
    for (const auto& c : contexts_) vram += m.on_cpu ? 0 : c->caps().device_local_bytes;
    ctx_default = vram < 23 * kBytesPerGiB ? 4096 : vram < 47 * kBytesPerGiB ? 32768 : 262144;
  }
  m.default_num_ctx = std::clamp<uint32_t>(ctx_default, 4, trained_);

  uint64_t heap = host ? system.total : 0;
  for (const auto& c : contexts_) heap += c->device().memory_budget().budget;
  // OLLAMA_GPU_OVERHEAD is VRAM kept free; system memory has no such reserve.
  fixed_ = weight_bytes + projector_bytes_ + act_estimate + draft_cost_.fixed +
           (host ? 0 : options_.gpu_overhead);
  min_kv_ =
      (per_token_kv_ + draft_cost_.per_token_kv) * std::min<uint32_t>(m.default_num_ctx, 2048);
  footprint_.need_bytes = fixed_ + min_kv_;
  footprint_.heap_bytes = heap;
  footprint_.host = host;
}

std::shared_ptr<LoadedModel> EngineModelLoader::Pending::finish(uint64_t free_now) {
  LoadedModel& m = *m_;
  const registry::ModelShow& show = m.show;
  const uint32_t ctx_default = m.default_num_ctx;
  runtime::RunnerOptions ro = options_.runner;
  ro.kv_cache_type = kv_type_;
  ro.max_context = std::min<uint32_t>(std::max(trained_, ctx_default), 262144);
  const uint32_t parallel_hint = std::max<uint32_t>(options_.num_parallel, 4);
  if (ro.kv_budget_bytes == 0) {
    const uint64_t both_per_token = per_token_kv_ + draft_cost_.per_token_kv;
    const uint64_t want = both_per_token * ctx_default * parallel_hint;
    uint64_t avail = free_now > fixed_ ? (free_now - fixed_) / 10 * 9 : min_kv_;
    // System memory (CPU backend, lavapipe).
    if (m.on_cpu) avail = std::min(avail, footprint_.heap_bytes / 8);
    // The target's share of the KV memory: the draft holds as many tokens.
    ro.kv_budget_bytes = std::max(min_kv_, std::min(want, avail)) / both_per_token * per_token_kv_;
  }
  const bool budget_set = options_.runner.kv_budget_bytes != 0;
  const uint64_t kv_tokens = ro.kv_budget_bytes / std::max<uint64_t>(per_token_kv_, 1);
  ro.max_seqs = options_.num_parallel
                    ? options_.num_parallel
                    : static_cast<uint32_t>(std::clamp<uint64_t>(kv_tokens / 256, 4, 64));
  const SpeculationOptions speculation =
      speculation_for(options_.speculation, m.on_cpu, with_draft_ || with_mtp_);
  ro.token_hidden = with_mtp_;  // the NextN block reads them
  // A hybrid verifies drafts with the state after each drafted token kept: room for two
  // sequences' full drafts a step (more sequences draft fewer tokens each: the planner's cap).
  if (speculation.mode != SpeculationMode::off && spec_.has_recurrent_state())
    ro.draft_states = 2 * speculation.draft_max;
  // A hybrid's recurrent states (live and kept) and their checkpoints come out of the KV budget
  // in the backends: a budget sized here for K/V tokens grows by them (VKLLM_KV_BUDGET is the
  // whole).
  if (!budget_set)
    ro.kv_budget_bytes = runtime::kv_budget_with_states(
        ro.kv_budget_bytes,
        runtime::recurrent_state_bytes(spec_) * (ro.max_seqs + uint64_t(ro.draft_states)),
        ro.state_checkpoint_share);
  ro.max_batch_tokens = std::max<uint32_t>(ro.max_batch_tokens, ro.max_seqs);
  // A vision model's steps take its images' rows in place of token embeddings.
  ro.embedding_inputs = has_images() && !spec_.has_pooling_type;
  // An image whose rows attend both ways goes in one step (Scheduler::admit): Gemma 4's larger
  // models (not E2B / E4B: vision::image_layout) take up to 1120 rows an image.
  if (ro.embedding_inputs && spec_.is_gemma4() && spec_.n_embd != 1536 && spec_.n_embd != 2560)
    ro.max_batch_tokens = std::max<uint32_t>(ro.max_batch_tokens, 1120);
  // Speculative steps want logits after every drafted token: room for one sequence's full draft
  // beside a row for each of the others.
  if (speculation.mode != SpeculationMode::off) {
    ro.max_logits_rows = std::max(ro.max_logits_rows, ro.max_seqs + speculation.draft_max);
  }

  // A raw blob is hashed against its digest beside the upload (once per process), so a file
  // changed on disk fails the load instead of answering with wrong weights.
  auto& blobs = loader_.store_.blobs();
  const registry::Digest blob = *show.model_blob;
  auto verified = std::async(std::launch::async, [&blobs, blob] { blobs.verify(blob); });
  try {
    build(ro);
  } catch (const std::bad_alloc&) {
    throw http::StatusError(500, "out of system memory loading " + name_);
  } catch (const vk::VulkanError& e) {
    if (e.result() == VK_ERROR_OUT_OF_DEVICE_MEMORY || e.result() == VK_ERROR_OUT_OF_HOST_MEMORY) {
      throw http::StatusError(500, "out of device memory loading " + name_ + ": " + e.what());
    }
    throw http::StatusError(500, "cannot load " + name_ + ": " + e.what());
  } catch (const std::exception& e) {
    throw http::StatusError(500, "cannot load " + name_ + ": " + e.what());
  }
  try {
    verified.get();
  } catch (const std::exception& e) {
    throw http::StatusError(500, "cannot load " + name_ + ": " + e.what());
  }
  m.device_bytes = m.embeddings ? m.embeddings->device_bytes() : m.runner->device_bytes();
  if (draft_blob_) loader_.load_draft(m, *draft_blob_, ro, kv_tokens);
  if (m.runner && has_images()) {
    m.images = load_images(m);
    m.weight_bytes += projector_bytes_;
    m.device_bytes += projector_bytes_;
    if (!m.device_shares.empty()) m.device_shares.front().second += projector_bytes_;
  }
  if (m.runner) {
    m.scheduler =
        std::make_unique<Scheduler>(*m.runner, *m.tokenizer,
                                    SchedulerOptions{0, 0, name_, options_.fault_inject_step,
                                                     speculation, m.drafter.get(), m.images.get()});
  }
  m.load_duration = duration_cast<nanoseconds>(steady_clock::now() - t0_);
  log_loaded(kv_tokens, ro.max_seqs);
  return m_;
}

std::unique_ptr<ImageInputs> EngineModelLoader::Pending::load_images(const LoadedModel& m) const {
  try {
    auto& blobs = loader_.store_.blobs();
    std::vector<uint8_t> bytes;
    if (inline_tower_) {
      // The tower's tensors out of the model's blob, as the mmproj llama.cpp would have written.
      auto reader = blobs.open(*m.show.model_blob);
      const uint64_t data = inline_tower_->data_offset();
      bytes = gguf::extract_inline_projector(
          *inline_tower_, [&](uint64_t offset, std::span<uint8_t> out) {
            if (reader.read_at(data + offset, std::as_writable_bytes(out)) != out.size())
              throw std::runtime_error("the model blob ends inside the vision tower");
          });
    } else {
      const registry::Digest digest = m.show.projectors.front();
      blobs.verify(digest);
      auto reader = blobs.open(digest);
      bytes.resize(reader.size());
      if (reader.read_at(0, std::as_writable_bytes(std::span(bytes))) != bytes.size())
        throw std::runtime_error("the projector blob ends early");
    }
    // On the model's device (a split model's first, whose stage takes the image rows).
    vk::Context* device = m.host_backend ? nullptr : m.context.get();
    return std::make_unique<ImageInputs>(std::move(bytes), device, spec_.n_embd_inp());
  } catch (const std::exception& e) {
    throw http::StatusError(500, "cannot load the projector of " + name_ + ": " + e.what());
  }
}

void EngineModelLoader::Pending::build(const runtime::RunnerOptions& ro) {
  LoadedModel& m = *m_;
  const registry::ModelShow& show = m.show;
  registry::BlobStore& blobs = loader_.store_.blobs();
  const gguf::GgufFile& stored = base_header_ ? *base_header_ : *m.header;
  BlobTensorSource blob_source(blobs.open(*show.model_blob), stored.data_offset());
  std::optional<runtime::LoraMergedSource> merged;
  if (adapter_) merged.emplace(stored, *m.header, blob_source, *adapter_);
  runtime::TensorDataSource& source =
      merged ? static_cast<runtime::TensorDataSource&>(*merged) : blob_source;
  if (split_) {
    // By layers, each device's in proportion to its free memory, or by rows; each device reads
    // the blob afresh.
    std::vector<vk::Context*> devices;
    std::vector<uint64_t> free;
    for (const auto& c : contexts_) {
      devices.push_back(c.get());
      const auto b = c->device().memory_budget();
      free.push_back(b.budget > b.usage ? b.budget - b.usage : 0);
    }
    const registry::Digest digest = *show.model_blob;
    const uint64_t data_offset = stored.data_offset();
    m.split_model = runtime::load_split_model(
        devices, *m.header,
        [&](size_t) -> std::unique_ptr<runtime::TensorDataSource> {
          return std::make_unique<BlobTensorSource>(blobs.open(digest), data_offset);
        },
        options_.split_mode, free, options_.model);
    m.runner = std::make_unique<runtime::Runner>(*m.split_model, ro);
    const auto bytes = m.runner->device_bytes_by_device();
    for (size_t i = 0; i < bytes.size(); ++i)
      m.device_shares.emplace_back(loader_.device_.split_selectors[i], bytes[i]);
  } else if (m.host_backend) {
    m.host_model = std::make_unique<runtime::HostModel>(*m.header, source);
    if (spec_.has_pooling_type) {
      m.embeddings = std::make_unique<EmbeddingQueue>(*m.host_model, loader_.embedder_options());
    } else {
      m.runner = std::make_unique<runtime::Runner>(*m.host_model, ro);
    }
  } else {
    m.model = std::make_unique<runtime::Model>(*m.context, *m.header, source, options_.model);
    if (spec_.has_pooling_type) {
      m.embeddings = std::make_unique<EmbeddingQueue>(*m.model, loader_.embedder_options());
    } else {
      m.runner = std::make_unique<runtime::Runner>(*m.model, ro);
    }
  }
}

void EngineModelLoader::Pending::log_loaded(uint64_t kv_tokens, uint32_t max_seqs) const {
  const LoadedModel& m = *m_;
  const double secs = duration<double>(m.load_duration).count();
  std::cerr << "vkllm: loaded " << name_ << " in " << secs << " s ("
            << double(m.weight_bytes) / secs / 1e9 << " GB/s of weights; "
            << gib_text(m.device_bytes) << " on " << device_name_ << ", KV " << kv_tokens
            << " tokens, " << max_seqs << " parallel, num_ctx " << m.default_num_ctx << ")";
  if (m.drafter)
    std::cerr << (with_mtp_ ? "; its multi-token-prediction block drafts"
                            : "; draft model beside it");
  if (const auto& layout = m.header->translation(); layout.applied()) {
    std::cerr << "; " << layout.name << " layout read as llama.cpp's";
  }
  if (!m.device_shares.empty()) {
    const bool rows = m.split_model->mode() == runtime::SplitMode::Row;
    std::cerr << (rows ? "; rows split over devices" : "; layers split");
    for (size_t i = 0; i < m.split_model->num_stages(); ++i) {
      const auto& r = m.split_model->stage(i).layers();
      if (rows) {
        std::cerr << (i ? " + " : " ") << m.device_shares[i].first;
      } else {
        std::cerr << (i ? " + " : " ") << (r.end - r.first) << " on device "
                  << m.device_shares[i].first;
      }
    }
  }
  std::cerr << "\n";
  metrics().add("vkllm_model_loads_total", {{"model", name_}});
  metrics().observe("vkllm_model_load_seconds", {{"model", name_}}, secs);
  metrics().set("vkllm_model_device_bytes", {{"model", name_}}, double(m.device_bytes));
  for (size_t i = 0; i < m.device_shares.size(); ++i) {
    metrics().set(
        "vkllm_model_device_bytes_by_device",
        {{"model", name_}, {"stage", std::to_string(i)}, {"device", m.device_shares[i].first}},
        double(m.device_shares[i].second));
  }
}

model::LoraAdapter EngineModelLoader::read_lora_adapter(const registry::Digest& digest) const {
  store_.blobs().verify(digest);  // a raw blob changed on disk fails here, as the weights do
  auto reader = store_.blobs().open(digest);
  std::vector<uint8_t> bytes(reader.size());
  if (reader.read_at(0, std::as_writable_bytes(std::span(bytes))) != bytes.size()) {
    throw std::runtime_error("adapter blob " + digest.str() + " ends early");
  }
  return model::LoraAdapter::from_bytes(std::move(bytes));
}

runtime::EmbedderOptions EngineModelLoader::embedder_options() const {
  runtime::EmbedderOptions o;
  o.matvec_max_batch = options_.runner.matvec_max_batch;
  return o;
}

std::vector<std::shared_ptr<vk::Context>> EngineModelLoader::vulkan_contexts() {
  std::lock_guard lock(contexts_mutex_);
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

void EngineModelLoader::forget_device() {
  std::lock_guard lock(contexts_mutex_);
  contexts_.clear();
}

uint64_t EngineModelLoader::free_bytes(
    bool host, const std::map<std::string, std::shared_ptr<LoadedModel>>& loaded) {
  if (host) {
    // Weights are copied in at load (resident, so MemAvailable counts them); KV and activations
    // may not be touched yet, so what they may still take is kept aside.
    uint64_t pending = 0;
    for (auto& [k, m] : loaded) {
      if (m->host_backend && m->device_bytes > m->weight_bytes)
        pending += m->device_bytes - m->weight_bytes;
    }
    const uint64_t avail = read_host_memory().available;
    return avail > pending ? avail - pending : 0;
  }
  std::lock_guard lock(contexts_mutex_);
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
  for (auto& [k, m] : loaded) in_use += m->device_bytes;
  return budget > in_use ? budget - in_use : 0;
}

}  // namespace vkllm::sched
