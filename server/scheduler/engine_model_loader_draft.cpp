// EngineModelLoader: loading a model's draft model (Ollama's DRAFT layer, draft_model.h) or its
// own multi-token-prediction block (engine/model/nextn_head.h, mtp_drafter.h) beside it, on the
// same backend, with its own Runner and paged KV cache.
#include <algorithm>

#include "engine/kv/kv_cache_type.h"
#include "engine/model/model_spec.h"
#include "engine/model/nextn_head.h"
#include "engine/runtime/kv_footprint.h"
#include "engine/vulkan/vk_error.h"
#include "server/scheduler/blob_model_source.h"
#include "server/scheduler/engine_model_loader.h"
#include "server/scheduler/model_manager.h"
#include "server/scheduler/mtp_drafter.h"

namespace vkllm::sched {

namespace {

// The target's KV cache type where the draft's heads fit its blocks, else f16.
kv::CacheType draft_cache_type(kv::CacheType wanted, const model::ModelSpec& spec) {
  return kv::cache_type_fits(wanted, spec.head_dim) && kv::cache_type_fits(wanted, spec.head_dim_v)
             ? wanted
             : kv::CacheType::F16;
}

}  // namespace

EngineModelLoader::DraftCost EngineModelLoader::read_draft(LoadedModel& m,
                                                           const registry::Digest& draft,
                                                           bool nextn_head) const {
  model::ModelSpec spec;
  try {
    m.draft_header = std::make_unique<gguf::GgufFile>(read_gguf_header(store_.blobs(), draft));
    if (nextn_head) model::view_as_nextn_head(*m.draft_header);
    spec = model::ModelSpec::from_gguf(*m.draft_header);
  } catch (const std::exception& e) {
    throw http::StatusError(
        500, "cannot read the draft model of " + m.show.name.display() + ": " + e.what());
  }
  DraftCost cost;
  for (const auto& t : m.draft_header->tensors()) {
    // A NextN block on a device uses the model's own embeddings and LM head (load_draft).
    const gguf::TensorInfo* own =
        nextn_head && !m.host_backend && m.header ? m.header->find_tensor(t.name) : nullptr;
    if (!own || own->offset != t.offset) cost.fixed += t.byte_size;
  }
  // Activations as the target's estimate has them (the draft steps at most as many tokens).
  cost.fixed += 4ull * (512ull * (8ull * spec.n_embd + 4ull * spec.n_ff) +
                        64ull * (2ull * spec.n_embd + 2ull * spec.n_vocab)) +
                (16ull << 20);
  const kv::CacheType type = draft_cache_type(options_.runner.kv_cache_type, spec);
  cost.per_token_kv = runtime::kv_bytes_per_token(spec, type);
  return cost;
}

void EngineModelLoader::load_draft(LoadedModel& m, const registry::Digest& draft,
                                   const runtime::RunnerOptions& target, uint64_t kv_tokens) const {
  const std::string what = "the draft model of " + m.show.name.display();
  try {
    const model::ModelSpec spec = model::ModelSpec::from_gguf(*m.draft_header);
    store_.blobs().verify(draft);  // a raw blob changed on disk fails here, as the weights do
    runtime::RunnerOptions ro = target;
    // Hidden states in (a NextN block's), none out; a hybrid draft puts its state back itself
    // (DraftModel), keeping none after drafted tokens.
    ro.embedding_inputs = spec.nextn_head;
    ro.token_hidden = false;
    ro.draft_states = 0;
    ro.kv_cache_type = draft_cache_type(target.kv_cache_type, spec);
    const uint64_t per_token_kv = runtime::kv_bytes_per_token(spec, ro.kv_cache_type);
    ro.kv_budget_bytes = std::max<uint64_t>(kv_tokens, ro.max_context) * per_token_kv;
    // A draft step asks for the last row of each sequence only.
    ro.max_logits_rows = ro.max_seqs;
    BlobTensorSource source(store_.blobs().open(draft), m.draft_header->data_offset());
    if (m.host_backend) {
      m.draft_host_model = std::make_unique<runtime::HostModel>(*m.draft_header, source);
      m.draft_runner = std::make_unique<runtime::Runner>(*m.draft_host_model, ro);
    } else {
      // A NextN block's embeddings and LM head are the model's own tensors.
      runtime::ModelOptions mo = options_.model;
      if (spec.nextn_head) mo.share_from = m.model.get();
      m.draft_model = std::make_unique<runtime::Model>(*m.context, *m.draft_header, source, mo);
      m.draft_runner = std::make_unique<runtime::Runner>(*m.draft_model, ro);
    }
  } catch (const std::bad_alloc&) {
    throw http::StatusError(500, "out of system memory loading " + what);
  } catch (const vk::VulkanError& e) {
    if (e.result() == VK_ERROR_OUT_OF_DEVICE_MEMORY || e.result() == VK_ERROR_OUT_OF_HOST_MEMORY) {
      throw http::StatusError(500, "out of device memory loading " + what + ": " + e.what());
    }
    throw http::StatusError(500, "cannot load " + what + ": " + e.what());
  } catch (const std::exception& e) {
    throw http::StatusError(500, "cannot load " + what + ": " + e.what());
  }
  if (m.draft_runner->spec().nextn_head)
    m.drafter = std::make_unique<MtpDrafter>(*m.draft_runner);
  else
    m.drafter = std::make_unique<DraftModel>(*m.draft_runner);
  m.device_bytes += m.draft_runner->device_bytes();
  m.weight_bytes += m.draft_runner->weight_bytes();
}

}  // namespace vkllm::sched
