#include "registry/manifest.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "registry/bounded_json.h"
#include "registry/errors.h"
#include "registry/go_json.h"

namespace vkllm::registry {
namespace {

using nlohmann::ordered_json;

[[noreturn]] void invalid(const std::string& why) {
  throw RegistryError(ErrorKind::invalid_input, "invalid manifest: " + why);
}

std::string string_field(const ordered_json& object, const char* key, const std::string& where,
                         bool required) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    if (required) invalid(where + "." + key + " is missing");
    return {};
  }
  if (!it->is_string()) invalid(where + "." + key + " is not a string");
  return it->get<std::string>();
}

Layer parse_layer(const ordered_json& object, const std::string& where) {
  if (!object.is_object()) invalid(where + " is not an object");
  Layer layer;
  layer.media_type = string_field(object, "mediaType", where, true);
  std::string digest = string_field(object, "digest", where, true);
  try {
    layer.digest = Digest::parse(digest);
  } catch (const RegistryError& e) {
    invalid(where + ".digest: " + e.what());
  }
  auto size = object.find("size");
  if (size == object.end() || !size->is_number_integer() || size->get<int64_t>() < 0)
    invalid(where + ".size is missing or not a non-negative integer");
  layer.size = size->get<uint64_t>();
  layer.from = string_field(object, "from", where, false);
  layer.name = string_field(object, "name", where, false);
  return layer;
}

ordered_json layer_json(const Layer& layer) {
  ordered_json out;
  out["mediaType"] = layer.media_type;
  out["digest"] = layer.digest.str();
  out["size"] = layer.size;
  if (!layer.from.empty()) out["from"] = layer.from;
  if (!layer.name.empty()) out["name"] = layer.name;
  return out;
}

}  // namespace

Manifest Manifest::parse(std::string_view json) {
  ordered_json doc = parse_bounded_ordered_json_or_discarded(json);
  if (doc.is_discarded()) invalid("not valid JSON");
  if (!doc.is_object()) invalid("top level is not an object");
  Manifest m;
  auto version = doc.find("schemaVersion");
  if (version == doc.end() || !version->is_number_integer())
    invalid("schemaVersion is missing or not an integer");
  m.schema_version = version->get<int>();
  if (m.schema_version != 2)
    invalid("schemaVersion " + std::to_string(m.schema_version) + " is not supported (want 2)");
  m.media_type = string_field(doc, "mediaType", "manifest", false);
  auto config = doc.find("config");
  if (config == doc.end()) invalid("config is missing");
  m.config = parse_layer(*config, "config");
  auto layers = doc.find("layers");
  if (layers == doc.end() || !layers->is_array()) invalid("layers is missing or not an array");
  for (size_t i = 0; i < layers->size(); ++i)
    m.layers.push_back(parse_layer((*layers)[i], "layers[" + std::to_string(i) + "]"));
  return m;
}

std::string Manifest::to_json() const {
  ordered_json out;
  out["schemaVersion"] = schema_version;
  out["mediaType"] = media_type;
  out["config"] = layer_json(config);
  ordered_json list = ordered_json::array();
  for (const auto& layer : layers) list.push_back(layer_json(layer));
  out["layers"] = std::move(list);
  return go_json_dump(out) + "\n";
}

std::vector<Digest> Manifest::blob_digests() const {
  std::vector<Digest> out{config.digest};
  for (const auto& layer : layers)
    if (std::find(out.begin(), out.end(), layer.digest) == out.end()) out.push_back(layer.digest);
  return out;
}

uint64_t Manifest::total_size() const {
  uint64_t total = config.size;
  for (const auto& layer : layers) total += layer.size;
  return total;
}

const Layer* Manifest::find_layer(std::string_view type) const {
  for (const auto& layer : layers)
    if (layer.media_type == type) return &layer;
  return nullptr;
}

}  // namespace vkllm::registry
