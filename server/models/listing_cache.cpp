#include "server/models/listing_cache.h"

#include "registry/bounded_json.h"
#include "server/http/json_text.h"

namespace vkllm::models {

using json = nlohmann::json;

namespace {

constexpr const char* kVersionKey = "facts_version";

}  // namespace

const json* ListingCache::facts(const registry::ModelRecord& record) {
  if (const auto it = facts_.find(record.manifest_digest); it != facts_.end()) return &it->second;
  auto& catalog = store_.catalog();
  json f;
  if (const auto stored = catalog.manifest_facts(record.manifest_digest)) {
    f = registry::parse_bounded_json_or_discarded(*stored);
  }
  if (!f.is_object() || f.value(kVersionKey, 0) != facts_version_) {
    std::optional<registry::ModelShow> shown;
    try {
      shown = store_.show(record.name);
    } catch (const std::exception&) {
      return nullptr;  // vanished or unreadable meanwhile: Ollama skips such manifests
    }
    if (shown->digest != record.manifest_digest) return nullptr;  // changed meanwhile
    f = compute_facts_(store_, *shown);
    f[kVersionKey] = facts_version_;
    catalog.put_manifest_facts(record.manifest_digest, http::json_text(f));
  }
  f.erase(kVersionKey);
  return &facts_.emplace(record.manifest_digest, std::move(f)).first->second;
}

std::shared_ptr<const std::string> ListingCache::current_body() {
  const uint64_t writes = store_.catalog().local_model_writes();
  std::lock_guard lock(mutex_);
  if (!body_ || writes != local_writes_ ||
      std::chrono::steady_clock::now() - checked_at_ >= kRecheck) {
    return nullptr;
  }
  return body_;
}

std::shared_ptr<const std::string> ListingCache::body() {
  // Read before the stamp: a write landing in between makes the next call look again.
  const uint64_t writes = store_.catalog().local_model_writes();
  const uint64_t stamp = store_.catalog().models_stamp();
  std::lock_guard lock(mutex_);
  local_writes_ = writes;
  checked_at_ = std::chrono::steady_clock::now();
  if (stamp_ == stamp && body_) return body_;
  const auto records = store_.catalog().models();
  std::vector<Entry> entries;
  for (const auto& record : records) {
    if (const json* f = facts(record)) entries.push_back({record, *f});
  }
  body_ = std::make_shared<const std::string>(render_(entries));
  stamp_ = stamp;
  return body_;
}

void ListingCache::remember(const registry::ModelName& name) {
  const auto record = store_.catalog().find_model(name);
  if (!record) return;
  std::lock_guard lock(mutex_);
  facts(*record);
}

}  // namespace vkllm::models
