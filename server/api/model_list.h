// /api/tags from the catalog. What a listing shows of each model (size, details, capabilities)
// comes from its config blob and GGUF header; it is computed once per manifest and stored in the
// catalog with it, and the whole body is kept until the catalog's models change, so a listing
// costs one SQLite statement when nothing changed.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "registry/model_store.h"

namespace vkllm::api {

class ModelList {
 public:
  explicit ModelList(registry::ModelStore& store) : store_(store) {}

  // The /api/tags JSON body. Blocking (SQLite, and blob reads for models not seen before).
  std::shared_ptr<const std::string> tags_body();

  // The last body when it is surely current: no model changed in this process since, and the
  // catalog was checked for other processes' changes less than kRecheck ago. Null otherwise.
  // Never blocks, so the io thread can answer without a trip to the worker pool.
  std::shared_ptr<const std::string> current_body();
  static constexpr std::chrono::milliseconds kRecheck{100};

  // Computes and stores the listing facts of the model `name` points at now (after create,
  // pull or copy), so the next listing does not. Unknown or unreadable models are ignored.
  void remember(const registry::ModelName& name);

 private:
  // The stored facts of `record`'s manifest, computing and storing them when missing; null
  // when the model cannot be read (Ollama leaves such models out).
  const nlohmann::json* facts(const registry::ModelRecord& record);

  registry::ModelStore& store_;
  std::mutex mutex_;
  std::map<registry::Digest, nlohmann::json> facts_;  // by manifest digest
  std::optional<uint64_t> stamp_;
  uint64_t local_writes_ = 0;  // catalog.local_model_writes() when body_ was checked
  std::chrono::steady_clock::time_point checked_at_;
  std::shared_ptr<const std::string> body_;
};

}  // namespace vkllm::api
