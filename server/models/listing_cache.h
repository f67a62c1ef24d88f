// Keeps a model listing (/api/tags) cheap: what a listing shows of each manifest (its "facts":
// size, details, capabilities, from the config blob and GGUF header) is computed once per
// manifest and stored in the catalog with it, and the whole rendered body is kept until the
// catalog's models change, so a listing costs one SQLite statement when nothing changed.
// What the facts hold and how the body is rendered are the caller's (server/api's JSON); this
// module decides only when to compute, store, reuse and render again.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "registry/model_store.h"

namespace vkllm::models {

class ListingCache {
 public:
  // One model's facts from its manifest as the store shows it.
  using FactsFn = std::function<nlohmann::json(registry::ModelStore&, const registry::ModelShow&)>;
  struct Entry {
    const registry::ModelRecord& record;
    const nlohmann::json& facts;
  };
  // The listing body for the models in catalog order (unreadable ones left out, as Ollama does).
  using RenderFn = std::function<std::string(const std::vector<Entry>&)>;

  // Stored facts of another `facts_version` are computed again (bump it when FactsFn changes).
  ListingCache(registry::ModelStore& store, int facts_version, FactsFn facts, RenderFn render)
      : store_(store),
        facts_version_(facts_version),
        compute_facts_(std::move(facts)),
        render_(std::move(render)) {}

  // The body. Blocking (SQLite, and blob reads for models not seen before).
  std::shared_ptr<const std::string> body();

  // The last body when it is surely current: no model changed in this process since, and the
  // catalog was checked for other processes' changes less than kRecheck ago. Null otherwise.
  // Never blocks, so the io thread can answer without a trip to the worker pool.
  std::shared_ptr<const std::string> current_body();
  static constexpr std::chrono::milliseconds kRecheck{100};

  // Computes and stores the facts of the model `name` points at now (after create, pull or
  // copy), so the next listing does not. Unknown or unreadable models are ignored.
  void remember(const registry::ModelName& name);

 private:
  // The stored facts of `record`'s manifest, computing and storing them when missing; null
  // when the model cannot be read.
  const nlohmann::json* facts(const registry::ModelRecord& record);

  registry::ModelStore& store_;
  const int facts_version_;
  const FactsFn compute_facts_;
  const RenderFn render_;
  std::mutex mutex_;
  std::map<registry::Digest, nlohmann::json> facts_;  // by manifest digest
  std::optional<uint64_t> stamp_;
  uint64_t local_writes_ = 0;  // catalog.local_model_writes() when body_ was checked
  std::chrono::steady_clock::time_point checked_at_;
  std::shared_ptr<const std::string> body_;
};

}  // namespace vkllm::models
