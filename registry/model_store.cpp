#include "registry/model_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "registry/bounded_json.h"
#include "registry/errors.h"
#include "registry/file_io.h"
#include "registry/go_json.h"
#include "registry/parameters.h"

namespace vkllm::registry {
namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

bool is_text_layer(std::string_view type) {
  return type == media_type::kTemplate || type == media_type::kPrompt ||
         type == media_type::kSystem || type == media_type::kParams ||
         type == media_type::kMessages || type == media_type::kLicense;
}

ModelDetails details_from_config(const ordered_json& config) {
  ModelDetails d;
  auto str = [&](const char* key) {
    auto it = config.find(key);
    return it != config.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  d.format = str("model_format");
  d.family = str("model_family");
  if (auto it = config.find("model_families"); it != config.end() && it->is_array())
    for (const auto& f : *it)
      if (f.is_string()) d.families.push_back(f.get<std::string>());
  d.parameter_size = str("model_type");
  d.quantization_level = str("file_type");
  return d;
}

std::vector<std::string> capabilities_from_config(const ordered_json& config) {
  std::vector<std::string> out;
  if (auto it = config.find("capabilities"); it != config.end() && it->is_array())
    for (const auto& c : *it)
      if (c.is_string()) out.push_back(c.get<std::string>());
  return out;
}

std::string config_string(const ordered_json& config, const char* key) {
  auto it = config.find(key);
  return it != config.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Ollama's ConfigV2 field order; keys it marks omitempty are left out when empty.
ordered_json make_config(const ModelDetails& d, const ordered_json& base,
                         const CreateRequest& request, const std::vector<Layer>& layers) {
  ordered_json c;
  c["model_format"] = d.format;
  c["model_family"] = d.family;
  c["model_families"] = d.families.empty() ? ordered_json(nullptr) : ordered_json(d.families);
  c["model_type"] = d.parameter_size;
  c["file_type"] = d.quantization_level;
  auto keep = [&](const char* key, const std::string& override_value) {
    std::string value = override_value.empty() ? config_string(base, key) : override_value;
    if (!value.empty()) c[key] = value;
  };
  keep("renderer", request.renderer);
  keep("parser", request.parser);
  keep("requires", request.requires_version);
  for (const char* key : {"remote_host", "remote_model", "capabilities", "context_length",
                          "embedding_length", "base_name", "draft"})
    if (auto it = base.find(key); it != base.end() && !it->is_null()) c[key] = *it;
  if (request.draft_config) c["draft"] = *request.draft_config;
  c["architecture"] = "amd64";
  c["os"] = "linux";
  ordered_json diff_ids = ordered_json::array();
  for (const auto& layer : layers) diff_ids.push_back(layer.digest.str());
  c["rootfs"] = {{"type", "layers"}, {"diff_ids", diff_ids}};
  return c;
}

}  // namespace

// Holds <root>/store.lock shared for the store's lifetime; the first opener (exclusive)
// is the one allowed to clean up after a crash, so a second process never deletes the temp
// files of a live one. Outside the anonymous namespace: ModelStoreLock (declared in the header)
// holds one, and a member of internal-linkage type in it is what -Wsubobject-linkage warns of
// when a unity batch includes this file.
class StoreLock {
 public:
  explicit StoreLock(const fs::path& file) {
    int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return;  // read-only store: no cleanup, no lock
    fd_ = UniqueFd(fd);
    exclusive_ = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  }
  bool exclusive() const { return exclusive_; }
  bool writable() const { return static_cast<bool>(fd_); }
  int fd() const { return fd_.get(); }
  void share() {
    if (fd_) ::flock(fd_.get(), LOCK_SH);
  }

 private:
  UniqueFd fd_;
  bool exclusive_ = false;
};

struct ModelStoreLock {
  StoreLock lock;
};

ModelStore::ModelStore(fs::path root, BlobStoreOptions options) : root_(std::move(root)) {
  blobs_ = std::make_unique<BlobStore>(root_, options);
  catalog_ = std::make_unique<Catalog>(root_ / "catalog.db");
  lock_ = std::make_shared<ModelStoreLock>(ModelStoreLock{StoreLock(root_ / "store.lock")});
  if (lock_->lock.exclusive()) {
    recover();
    lock_->lock.share();
  } else {
    lock_->lock.share();
  }
}

ModelStore::~ModelStore() = default;

void ModelStore::claim_sole_writer() {
  if (writer_lock_) return;
  const fs::path file = root_ / "writer.lock";
  auto lock = std::make_shared<ModelStoreLock>(ModelStoreLock{StoreLock(file)});
  if (!lock->lock.writable()) {
    throw RegistryError(ErrorKind::io, "cannot open " + file.string() + " to lock the model store");
  }
  if (!lock->lock.exclusive()) {
    char pid[32] = {};
    const ssize_t n = ::pread(lock->lock.fd(), pid, sizeof pid - 1, 0);
    std::string holder = n > 0 ? std::string(pid, static_cast<size_t>(n)) : std::string();
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    throw RegistryError(ErrorKind::io,
                        "the model store " + root_.string() + " is in use by another vkllm" +
                            (holder.empty() ? std::string() : " process (pid " + holder + ")") +
                            "; stop it, or set OLLAMA_MODELS to another folder");
  }
  // Who holds it, for the message above (the lock itself is the flock, not this text).
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock->lock.fd(), 0) == 0) {
    [[maybe_unused]] const ssize_t written = ::pwrite(lock->lock.fd(), pid.data(), pid.size(), 0);
  }
  writer_lock_ = std::move(lock);
}

// --- blobs -----------------------------------------------------------------------------------

bool ModelStore::has_blob(const Digest& digest) const {
  return catalog_->find_blob(digest).has_value() && blobs_->contains(digest);
}

BlobInfo ModelStore::commit_blob(BlobWriter& writer, const std::optional<Digest>& expected) {
  BlobInfo info = expected ? writer.commit(*expected) : writer.commit();
  catalog_->add_blob(info);
  return info;
}

BlobInfo ModelStore::put_blob(std::string_view bytes, const std::optional<Digest>& expected) {
  BlobInfo info = blobs_->put(bytes, expected);
  catalog_->add_blob(info);
  return info;
}

BlobInfo ModelStore::put_blob_file(const fs::path& file, const std::optional<Digest>& expected) {
  BlobInfo info = blobs_->put_file(file, expected);
  catalog_->add_blob(info);
  return info;
}

// --- models ----------------------------------------------------------------------------------

std::optional<ModelRecord> ModelStore::find(const ModelName& name) const {
  return catalog_->find_model(name);
}

std::optional<ModelStore::ManifestBytes> ModelStore::manifest(const ModelName& name) const {
  auto record = catalog_->find_model(name);
  if (!record) return std::nullopt;
  auto json = catalog_->manifest(record->manifest_digest);
  if (!json) return std::nullopt;
  return ManifestBytes{std::move(*json), record->manifest_digest};
}

std::vector<Digest> ModelStore::remove_unused_locked(const std::vector<Digest>& candidates) {
  std::vector<Digest> removed;
  for (const Digest& digest : candidates) {
    if (catalog_->blob_references(digest) != 0) continue;
    // Row first, then file: a crash in between leaves a complete file without a row, which
    // recover() adopts again; never a row without its file.
    catalog_->remove_blob(digest);
    blobs_->remove(digest);
    removed.push_back(digest);
  }
  return removed;
}

Digest ModelStore::commit_model_locked(const ModelName& name, std::string_view manifest_json,
                                       std::optional<Clock::time_point> modified_at, bool prune) {
  std::vector<Digest> previous;
  if (auto old = catalog_->find_model(name))
    for (const auto& layer : catalog_->manifest_blobs(old->manifest_digest))
      previous.push_back(layer.digest);
  // Every referenced blob must be a complete file, not only a row.
  for (const Digest& digest : Manifest::parse(manifest_json).blob_digests())
    if (!blobs_->contains(digest))
      throw RegistryError(ErrorKind::not_found, "blob \"" + digest.str() + "\" of model " +
                                                    name.display() + " is not in the store");
  Digest digest = catalog_->put_model(name, manifest_json, modified_at);
  if (prune && prune_enabled()) remove_unused_locked(previous);
  return digest;
}

Digest ModelStore::commit_model(const ModelName& name, std::string_view manifest_json) {
  std::lock_guard lock(gc_mutex_);
  return commit_model_locked(name, manifest_json, std::nullopt, true);
}

void ModelStore::copy(const ModelName& source, const ModelName& destination) {
  std::lock_guard lock(gc_mutex_);
  auto record = catalog_->find_model(source);
  if (!record)
    throw RegistryError(ErrorKind::not_found, "model \"" + source.display() + "\" not found");
  if (source.same_model(destination)) return;
  auto json = catalog_->manifest(record->manifest_digest);
  if (!json)
    throw RegistryError(ErrorKind::not_found, "manifest of \"" + source.display() + "\" not found");
  commit_model_locked(destination, *json, std::nullopt, true);
}

bool ModelStore::remove(const ModelName& name) {
  std::lock_guard lock(gc_mutex_);
  auto record = catalog_->find_model(name);
  if (!record) return false;
  std::vector<Digest> used;
  for (const auto& layer : catalog_->manifest_blobs(record->manifest_digest))
    used.push_back(layer.digest);
  if (!catalog_->remove_model(name)) return false;
  if (prune_enabled()) remove_unused_locked(used);
  return true;
}

std::vector<Digest> ModelStore::prune() {
  std::lock_guard lock(gc_mutex_);
  return remove_unused_locked(catalog_->unreferenced_blobs());
}

std::optional<BlobInfo> ModelStore::recompress_blob(const Digest& digest, std::stop_token stop) {
  if (!catalog_->find_blob(digest)) return std::nullopt;
  try {
    blobs_->recompress(digest, stop);  // long: not under gc_mutex_, readers and commits go on
  } catch (const RegistryError& e) {
    if (e.kind() != ErrorKind::not_found) throw;
  }
  std::lock_guard lock(gc_mutex_);
  if (!catalog_->find_blob(digest)) {
    // Removed while it was rewritten: the new file's rename may have brought it back.
    blobs_->remove(digest);
    return std::nullopt;
  }
  auto now = blobs_->info(digest);
  if (now) catalog_->add_blob(*now);
  // Done (zstd now, or raw because the whole blob saves too little) unless stopped first: a
  // stopped rewrite stays owed to the next run.
  if (!stop.stop_requested()) catalog_->clear_recompression_pending(digest);
  return now;
}

std::vector<ModelSummary> ModelStore::list() const {
  std::vector<ModelSummary> out;
  for (const auto& record : catalog_->models()) {
    try {
      auto json = catalog_->manifest(record.manifest_digest);
      if (!json) continue;
      Manifest manifest = Manifest::parse(*json);
      ordered_json config = parse_bounded_ordered_json(blobs_->read_text(manifest.config.digest));
      ModelSummary s;
      s.name = record.name;
      s.digest = record.manifest_digest;
      s.size = manifest.total_size();
      s.modified_at = record.modified_at;
      s.details = details_from_config(config);
      s.capabilities = capabilities_from_config(config);
      out.push_back(std::move(s));
    } catch (const std::exception&) {
      // Like Ollama, a model whose manifest or config cannot be read is left out of the list.
    }
  }
  return out;
}

ModelShow ModelStore::show(const ModelName& name) const {
  auto record = catalog_->find_model(name);
  if (!record)
    throw RegistryError(ErrorKind::not_found, "model '" + name.display() + "' not found");
  auto json = catalog_->manifest(record->manifest_digest);
  if (!json) throw RegistryError(ErrorKind::not_found, "model '" + name.display() + "' not found");
  ModelShow s;
  s.name = record->name;
  s.digest = record->manifest_digest;
  s.manifest_json = *json;
  s.manifest = Manifest::parse(*json);
  s.modified_at = record->modified_at;
  s.config = parse_bounded_ordered_json_or_discarded(blobs_->read_text(s.manifest.config.digest));
  if (s.config.is_discarded() || !s.config.is_object())
    throw RegistryError(ErrorKind::corrupt,
                        "config blob " + s.manifest.config.digest.str() + " is not a JSON object");
  s.details = details_from_config(s.config);
  s.renderer = config_string(s.config, "renderer");
  s.parser = config_string(s.config, "parser");
  s.requires_version = config_string(s.config, "requires");
  for (const auto& layer : s.manifest.layers) {
    const std::string& type = layer.media_type;
    if (type == media_type::kModel) {
      if (!s.model_blob) {
        s.model_blob = layer.digest;
        s.details.parent_model = layer.from;
      }
    } else if (type == media_type::kProjector) {
      s.projectors.push_back(layer.digest);
    } else if (type == media_type::kAdapter) {
      s.adapters.push_back(layer.digest);
    } else if (type == media_type::kDraft) {
      s.draft = layer.digest;
    } else if (type == media_type::kTemplate || type == media_type::kPrompt) {
      s.template_text = blobs_->read_text(layer.digest);
    } else if (type == media_type::kSystem) {
      s.system = blobs_->read_text(layer.digest);
    } else if (type == media_type::kLicense) {
      s.licenses.push_back(blobs_->read_text(layer.digest));
    } else if (type == media_type::kParams) {
      auto params = parse_bounded_ordered_json_or_discarded(blobs_->read_text(layer.digest));
      if (params.is_object()) s.parameters = std::move(params);
    } else if (type == media_type::kMessages) {
      auto messages = parse_bounded_ordered_json_or_discarded(blobs_->read_text(layer.digest));
      if (messages.is_array())
        for (const auto& m : messages)
          if (m.is_object())
            s.messages.push_back(
                {m.value("role", std::string()), m.value("content", std::string())});
    }
  }
  return s;
}

Digest ModelStore::create(const CreateRequest& request, const DetailsProvider& details,
                          const StatusCallback& status) {
  auto say = [&](const std::string& line) {
    if (status) status(line);
  };
  if (!request.from && request.files.empty())
    throw RegistryError(ErrorKind::invalid_input, "neither 'from' or 'files' was specified");
  // From reading the source model to the manifest write, no prune may run: it would delete a
  // layer this create reuses or has just written (a system prompt shared with a model being
  // deleted), which nothing references until the manifest is committed.
  std::lock_guard gc_lock(gc_mutex_);

  std::vector<Layer> layers;
  ordered_json base_config = ordered_json::object();
  ModelDetails model_details;
  bool have_details = false;
  ordered_json base_params = ordered_json::object();

  if (request.from) {
    ModelShow source = show(*request.from);
    base_config = source.config;
    model_details = source.details;
    have_details = true;
    std::string from_name = source.name.display();
    for (Layer layer : source.manifest.layers) {
      if (layer.media_type == media_type::kParams) {
        base_params = source.parameters;
        continue;  // rewritten below, merged with the request's
      }
      bool weights = !is_text_layer(layer.media_type);
      if (weights && layer.from.empty()) layer.from = from_name;
      layers.push_back(std::move(layer));
    }
    if (auto it = std::find_if(source.manifest.layers.begin(), source.manifest.layers.end(),
                               [](const Layer& l) { return l.media_type == media_type::kModel; });
        it != source.manifest.layers.end())
      model_details.parent_model = it->from.empty() ? from_name : it->from;
  }
  for (const auto& file : request.files) {
    auto blob = catalog_->find_blob(file.digest);
    if (!blob || !blobs_->contains(file.digest))
      throw RegistryError(ErrorKind::not_found, "blob \"" + file.digest.str() + "\" not found");
    Layer layer{file.media_type, file.digest, blob->size, "", ""};
    if (file.media_type == media_type::kModel) {
      // New weights replace the source model's and define the details.
      std::erase_if(layers, [](const Layer& l) { return l.media_type == media_type::kModel; });
      model_details = details(file.digest);
      have_details = true;
      layers.insert(layers.begin(), layer);
    } else if (file.media_type == media_type::kDraft) {
      // A model has one draft: the request's replaces the source model's.
      std::erase_if(layers, [](const Layer& l) { return l.media_type == media_type::kDraft; });
      layers.push_back(layer);
    } else {
      layers.push_back(layer);
    }
  }
  if (!have_details || std::none_of(layers.begin(), layers.end(), [](const Layer& l) {
        return l.media_type == media_type::kModel;
      }))
    throw RegistryError(ErrorKind::invalid_input, "no model weights: 'files' has no model file");

  std::vector<std::pair<Layer, bool>> created;  // text layers and whether they already existed
  auto text_layer = [&](std::string_view type, const std::string& text) {
    Digest digest = Digest::of(text);
    bool existed = has_blob(digest);
    BlobInfo info = put_blob(text, digest);
    Layer layer{std::string(type), info.digest, info.size, "", ""};
    layers.push_back(layer);
    created.emplace_back(layer, existed);
  };
  auto replace = [&](std::initializer_list<std::string_view> types) {
    std::erase_if(layers, [&](const Layer& l) {
      return std::find(types.begin(), types.end(), l.media_type) != types.end();
    });
  };
  if (request.template_text) {
    replace({media_type::kTemplate, media_type::kPrompt});
    text_layer(media_type::kTemplate, *request.template_text);
  }
  if (request.system) {
    replace({media_type::kSystem});
    text_layer(media_type::kSystem, *request.system);
  }
  for (const auto& license : request.licenses) text_layer(media_type::kLicense, license);
  ordered_json params = merge_parameters(base_params, normalize_parameters(request.parameters));
  if (!params.empty()) {
    // Go marshals maps with sorted keys; nlohmann's json (unordered) sorts the same way.
    text_layer(media_type::kParams, go_json_dump(ordered_json(nlohmann::json(params))) + "\n");
  }
  if (!request.messages.empty()) {
    replace({media_type::kMessages});
    ordered_json messages = ordered_json::array();
    for (const auto& m : request.messages)
      messages.push_back(ordered_json{{"role", m.role}, {"content", m.content}});
    text_layer(media_type::kMessages, go_json_dump(messages) + "\n");
  }

  ordered_json config = make_config(model_details, base_config, request, layers);
  std::string config_text = go_json_dump(config) + "\n";
  BlobInfo config_blob = put_blob(config_text);

  for (const auto& layer : layers) {
    auto it = std::find_if(created.begin(), created.end(),
                           [&](const auto& c) { return c.first.digest == layer.digest; });
    bool fresh = it != created.end() && !it->second;
    if (layer.media_type == media_type::kTemplate && request.template_text &&
        !request.template_status.empty()) {
      say(request.template_status);
      continue;
    }
    say(std::string(fresh ? "creating new layer " : "using existing layer ") + layer.digest.str());
  }
  say("writing manifest");
  Manifest manifest;
  manifest.config =
      Layer{std::string(media_type::kConfig), config_blob.digest, config_blob.size, "", ""};
  manifest.layers = layers;
  const Digest digest = commit_model_locked(request.name, manifest.to_json(), std::nullopt, true);
  say("success");
  return digest;
}

}  // namespace vkllm::registry
