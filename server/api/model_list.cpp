#include "server/api/model_list.h"

#include "server/api/details_json.h"
#include "server/api/time_format.h"
#include "server/http/json_text.h"
#include "server/models/model_facts.h"

namespace vkllm::api {

using json = nlohmann::json;

namespace {

// Bumped whenever what listing_facts() derives changes: stored facts of another version are
// computed again.
constexpr int kFactsVersion = 2;  // 2: capabilities from the template in use

json listing_facts(registry::ModelStore& store, const registry::ModelShow& shown) {
  const auto summary = models::summary_of(store, shown);
  json f;
  f["size"] = shown.manifest.total_size();
  auto details = shown.details;
  details.parent_model.clear();
  f["details"] = details_json(details, summary.get(), true);
  const auto caps = models::capabilities_of(shown, summary.get());
  if (!caps.names.empty()) f["capabilities"] = caps.names;
  return f;
}

std::string tags_body(const std::vector<models::ListingCache::Entry>& entries) {
  json list = json::array();
  for (const auto& [record, facts] : entries) {
    json e = facts;
    e["name"] = record.name.display();
    e["model"] = record.name.display();
    e["modified_at"] = rfc3339_local(record.modified_at);
    e["digest"] = record.manifest_digest.hex();
    list.push_back(std::move(e));
  }
  json body;
  body["models"] = std::move(list);
  return http::json_text(body);
}

}  // namespace

std::shared_ptr<models::ListingCache> make_model_list(registry::ModelStore& store) {
  return std::make_shared<models::ListingCache>(store, kFactsVersion, listing_facts, tags_body);
}

}  // namespace vkllm::api
