#include "registry/push.h"

#include <algorithm>
#include <cctype>
#include <unordered_set>

#include "registry/errors.h"
#include "registry/manifest.h"
#include "registry/pull.h"

namespace vkllm::registry {
namespace {

bool same_host(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace

void push(const ModelName& name, const BlobStore& store, const Catalog& catalog,
          const PushOptions& options, const TransferStatusFn& progress, std::stop_token stop) {
  auto emit = [&](const std::string& status) {
    if (progress) progress(TransferStatus{status, {}, 0, 0});
  };
  OciRepository repo = oci_repository(name, options.insecure);

  emit("retrieving manifest");
  auto record = catalog.find_model(name);
  std::optional<std::string> manifest_bytes;
  if (record) manifest_bytes = catalog.manifest(record->manifest_digest);
  if (!manifest_bytes) {
    emit("couldn't retrieve manifest");
    throw RegistryError(ErrorKind::not_found, "model '" + name.display() + "' not found");
  }
  Manifest manifest = Manifest::parse(*manifest_bytes);

  std::vector<const Layer*> blobs;
  std::unordered_set<Digest> seen;
  for (const auto& layer : manifest.layers) {
    if (seen.insert(layer.digest).second) blobs.push_back(&layer);
  }
  if (seen.insert(manifest.config.digest).second) blobs.push_back(&manifest.config);

  OciClient client(options.client);
  for (const Layer* layer : blobs) {
    if (stop.stop_requested()) throw OciError(OciErrorKind::cancelled, "cancelled");
    ThrottledProgress line(progress, "pushing " + layer->digest.short_hex(), layer->digest.str(),
                           layer->size, options.progress_interval);
    if (client.blob_size(repo, layer->digest.str(), stop) == layer->size) {
      line.update(layer->size);
      continue;
    }
    BlobReader reader = store.open(layer->digest);
    if (reader.size() != layer->size) {
      throw RegistryError(ErrorKind::corrupt, "blob " + layer->digest.str() + " holds " +
                                                  std::to_string(reader.size()) +
                                                  " bytes but the manifest says " +
                                                  std::to_string(layer->size));
    }
    // Mount instead of upload when the layer came from a model on the same registry.
    std::optional<std::string> mount_from;
    if (!layer->from.empty()) {
      auto source = ModelName::try_parse(layer->from);
      if (source && same_host(source->host, name.host) &&
          source->repository() != name.repository()) {
        mount_from = source->repository();
      }
    }
    line.update(0, true);
    client.upload_blob(
        repo, layer->digest.str(), layer->size,
        [&](uint64_t offset, std::span<std::byte> out) { return reader.read_at(offset, out); },
        [&](uint64_t completed) { line.update(completed); }, mount_from, stop);
    line.update(layer->size);
  }

  emit("pushing manifest");
  std::string media_type =
      manifest.media_type.empty() ? std::string(kDockerManifestV2) : manifest.media_type;
  client.put_manifest(repo, name.tag, *manifest_bytes, media_type, stop);
  emit("success");
}

}  // namespace vkllm::registry
