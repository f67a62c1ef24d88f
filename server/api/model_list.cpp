#include "server/api/model_list.h"

#include "registry/bounded_json.h"
#include "server/api/model_facts.h"
#include "server/api/time_format.h"
#include "server/http/json_text.h"

namespace vkllm::api {

using json = nlohmann::json;

namespace {

// Bumped whenever what compute_facts() derives changes: stored facts of another version are
// computed again.
constexpr int kFactsVersion = 1;
constexpr const char* kVersionKey = "facts_version";

json compute_facts(registry::ModelStore& store, const registry::ModelShow& shown) {
  const auto summary = summary_of(store, shown);
  json f;
  f["size"] = shown.manifest.total_size();
  auto details = shown.details;
  details.parent_model.clear();
  f["details"] = details_json(details, summary.get(), true);
  const auto caps = capabilities_of(shown, summary.get());
  if (!caps.empty()) f["capabilities"] = caps;
  return f;
}

}  // namespace

const json* ModelList::facts(const registry::ModelRecord& record) {
  if (const auto it = facts_.find(record.manifest_digest); it != facts_.end()) return &it->second;
  auto& catalog = store_.catalog();
  json f;
  if (const auto stored = catalog.manifest_facts(record.manifest_digest)) {
    f = registry::parse_bounded_json_or_discarded(*stored);
  }
  if (!f.is_object() || f.value(kVersionKey, 0) != kFactsVersion) {
    std::optional<registry::ModelShow> shown;
    try {
      shown = store_.show(record.name);
    } catch (const std::exception&) {
      return nullptr;  // vanished or unreadable meanwhile: Ollama skips such manifests
    }
    if (shown->digest != record.manifest_digest) return nullptr;  // changed meanwhile
    f = compute_facts(store_, *shown);
    f[kVersionKey] = kFactsVersion;
    catalog.put_manifest_facts(record.manifest_digest, http::json_text(f));
  }
  f.erase(kVersionKey);
  return &facts_.emplace(record.manifest_digest, std::move(f)).first->second;
}

std::shared_ptr<const std::string> ModelList::current_body() {
  const uint64_t writes = store_.catalog().local_model_writes();
  std::lock_guard lock(mutex_);
  if (!body_ || writes != local_writes_ ||
      std::chrono::steady_clock::now() - checked_at_ >= kRecheck) {
    return nullptr;
  }
  return body_;
}

std::shared_ptr<const std::string> ModelList::tags_body() {
  // Read before the stamp: a write landing in between makes the next call look again.
  const uint64_t writes = store_.catalog().local_model_writes();
  const uint64_t stamp = store_.catalog().models_stamp();
  std::lock_guard lock(mutex_);
  local_writes_ = writes;
  checked_at_ = std::chrono::steady_clock::now();
  if (stamp_ == stamp && body_) return body_;
  json models = json::array();
  for (const auto& record : store_.catalog().models()) {
    const json* f = facts(record);
    if (f == nullptr) continue;
    json e = *f;
    e["name"] = record.name.display();
    e["model"] = record.name.display();
    e["modified_at"] = rfc3339_local(record.modified_at);
    e["digest"] = record.manifest_digest.hex();
    models.push_back(std::move(e));
  }
  json body;
  body["models"] = std::move(models);
  body_ = std::make_shared<const std::string>(http::json_text(body));
  stamp_ = stamp;
  return body_;
}

void ModelList::remember(const registry::ModelName& name) {
  const auto record = store_.catalog().find_model(name);
  if (!record) return;
  std::lock_guard lock(mutex_);
  facts(*record);
}

}  // namespace vkllm::api
