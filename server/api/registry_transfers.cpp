#include "server/api/registry_transfers.h"

#include "registry/pull.h"
#include "registry/push.h"

namespace vkllm::api {
namespace {

// ProgressResponse: digest, total and completed are omitempty like Ollama's.
nlohmann::json progress_json(const registry::TransferStatus& s) {
  nlohmann::json j;
  j["status"] = s.status;
  if (!s.digest.empty()) j["digest"] = s.digest;
  if (s.total != 0) j["total"] = s.total;
  if (s.completed != 0) j["completed"] = s.completed;
  return j;
}

}  // namespace

TransferFn registry_pull(registry::ModelStore& store, registry::RecompressQueue* recompress,
                         registry::InsecureRegistries insecure) {
  return [&store, recompress, insecure = std::move(insecure)](
             const TransferRequest& t, const Emit& emit, std::stop_token stop) {
    registry::PullOptions options;
    options.insecure = t.insecure || insecure.allows(t.name);
    options.prune = store.prune_enabled();
    if (recompress)
      options.compress_later = [recompress](const auto& d) { recompress->enqueue(d); };
    registry::pull(
        t.name, store.blobs(), store.catalog(), options,
        [&](const registry::TransferStatus& s) { emit(progress_json(s)); }, stop);
  };
}

TransferFn registry_push(registry::ModelStore& store, registry::InsecureRegistries insecure) {
  return [&store, insecure = std::move(insecure)](const TransferRequest& t, const Emit& emit,
                                                  std::stop_token stop) {
    registry::PushOptions options;
    options.insecure = t.insecure || insecure.allows(t.name);
    registry::push(
        t.name, store.blobs(), store.catalog(), options,
        [&](const registry::TransferStatus& s) { emit(progress_json(s)); }, stop);
  };
}

}  // namespace vkllm::api
