// The model store: a BlobStore and a Catalog under one root, and the operations Ollama's
// model-management API needs on them (create, copy, delete, list, show, import, recover). It
// knows nothing of GGUF: whoever creates a model from a weights blob supplies its details.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "registry/blob_store.h"
#include "registry/catalog.h"
#include "registry/digest.h"
#include "registry/manifest.h"
#include "registry/model_name.h"

namespace vkllm::registry {

// What /api/tags and /api/show call "details"; stored in the config blob.
struct ModelDetails {
  std::string parent_model;  // source model display name when created FROM another model
  std::string format = "gguf";
  std::string family;
  std::vector<std::string> families;
  std::string parameter_size;      // config "model_type", e.g. "8.0B"
  std::string quantization_level;  // config "file_type", e.g. "Q4_K_M"
};

struct ChatMessage {
  std::string role;
  std::string content;
  friend bool operator==(const ChatMessage&, const ChatMessage&) = default;
};

// Called once per created model for its weights blob; typically reads the GGUF header.
using DetailsProvider = std::function<ModelDetails(const Digest& model_blob)>;
// Progress lines for create and import ("using existing layer sha256:...", "writing manifest").
using StatusCallback = std::function<void(const std::string& status)>;

struct CreateRequest {
  ModelName name;
  // Either an installed model whose layers are reused...
  std::optional<ModelName> from;
  // ...and/or blobs already in the store with the media type the caller determined
  // (media_type::kModel for the weights, kProjector, kAdapter, kDraft).
  struct File {
    Digest digest;
    std::string media_type{media_type::kModel};
  };
  std::vector<File> files;
  std::optional<std::string> template_text;  // replaces the template layer
  std::string template_status;  // status line for that layer, e.g. "using autodetected template x"
  std::optional<std::string> system;  // replaces the system layer
  std::vector<std::string> licenses;  // appended as license layers
  nlohmann::ordered_json parameters = nlohmann::ordered_json::object();  // merged over from's
  std::vector<ChatMessage> messages;  // replaces the messages layer when non-empty
  std::string renderer, parser;       // stored in the config blob when non-empty
  std::string requires_version;       // config "requires" (REQUIRES)
  // A kDraft file replaces the source model's draft layer; this becomes the config's "draft"
  // (Ollama's {"model_format", "architecture"}) when set.
  std::optional<nlohmann::ordered_json> draft_config;
};

struct ModelSummary {  // one /api/tags entry
  ModelName name;
  Digest digest;  // of the manifest bytes
  uint64_t size = 0;
  Clock::time_point modified_at;
  ModelDetails details;
  std::vector<std::string> capabilities;  // from the config blob, if it lists any
};

struct ModelShow {  // what /api/show and `ollama show --modelfile` need from the store
  ModelName name;
  Digest digest;
  std::string manifest_json;
  Manifest manifest;
  nlohmann::ordered_json config;  // the config blob
  Clock::time_point modified_at;
  ModelDetails details;
  std::optional<Digest> model_blob;
  std::vector<Digest> projectors, adapters;
  std::optional<Digest> draft;
  std::optional<std::string> template_text;  // nullopt when the model has no template layer
  std::string system;
  std::vector<std::string> licenses;
  nlohmann::ordered_json parameters = nlohmann::ordered_json::object();
  std::vector<ChatMessage> messages;
  std::string renderer, parser;
  std::string requires_version;  // config "requires"

  // /api/show "parameters": `key value` lines, key padded to 30 columns, values as Go's %#v.
  std::string parameters_text() const;
  // /api/show "modelfile": the commented header naming the model, then FROM <path> etc.
  // `blob_path` maps a blob to what FROM/ADAPTER lines print; `system_override` and
  // `extra_parameters` are /api/show's request fields.
  std::string modelfile(const std::function<std::string(const Digest&)>& blob_path,
                        const std::optional<std::string>& system_override = {},
                        const nlohmann::ordered_json& extra_parameters = {}) const;
};

struct RecoveryReport {
  size_t temp_files_removed = 0;
  size_t blob_rows_added = 0;               // complete files whose row was lost in a crash
  size_t blob_rows_removed = 0;             // rows whose file is gone
  std::vector<std::string> models_removed;  // pointed at a blob whose file is gone
  size_t downloads_removed = 0;  // download rows without a temp file, or temp files w/o row
};

struct ImportReport {
  std::vector<std::string> models;  // display names imported
  size_t blobs_copied = 0;
  size_t blobs_skipped = 0;           // already present
  std::vector<std::string> failures;  // "<manifest path>: <reason>"
};

class ModelStore {
 public:
  // Opens <root> (creating it), its blob store and <root>/catalog.db, then runs recover().
  explicit ModelStore(std::filesystem::path root, BlobStoreOptions options = {});
  ~ModelStore();

  // Makes this process the store's only writer for the store's lifetime (`vkllm serve`,
  // `import-ollama`): two writers would race each other's prunes and commits. Throws
  // RegistryError(io) naming the store and the other process's pid when one already holds it.
  void claim_sole_writer();

  BlobStore& blobs() { return *blobs_; }
  Catalog& catalog() { return *catalog_; }
  const std::filesystem::path& root() const { return root_; }

  // --- blobs (for /api/blobs, pull) ---
  bool has_blob(const Digest& digest) const;
  // Commits a writer's blob and records it (file durable first, then the row).
  BlobInfo commit_blob(BlobWriter& writer, const std::optional<Digest>& expected);
  BlobInfo put_blob(std::string_view bytes, const std::optional<Digest>& expected = {});
  BlobInfo put_blob_file(const std::filesystem::path& file,
                         const std::optional<Digest>& expected = {});

  // --- models ---
  // Resolves a name case-insensitively; nullopt when not installed.
  std::optional<ModelRecord> find(const ModelName& name) const;
  // Raw manifest bytes and digest (for the read-only /v2/ view and push).
  struct ManifestBytes {
    std::string json;
    Digest digest;
  };
  std::optional<ManifestBytes> manifest(const ModelName& name) const;
  // Points a name at manifest bytes whose blobs are all in the store; then, unless
  // OLLAMA_NOPRUNE is set, removes blobs the replaced manifest used that nothing references.
  // Returns the manifest digest.
  Digest commit_model(const ModelName& name, std::string_view manifest_json);

  // Builds the layers and config blob, writes the manifest (Ollama-shaped), prunes the
  // replaced model's unused blobs unless OLLAMA_NOPRUNE. Throws RegistryError(not_found) for a
  // missing `from` model or file blob, invalid_input when neither from nor a model file is
  // given or no weights result.
  Digest create(const CreateRequest& request, const DetailsProvider& details,
                const StatusCallback& status = {});
  // Writes the same manifest bytes under `destination`; not_found when source is absent.
  void copy(const ModelName& source, const ModelName& destination);
  // Removes the name and, unless OLLAMA_NOPRUNE is set, every blob no remaining model references
  // (a later prune() collects them). Returns false when the model was not installed.
  bool remove(const ModelName& name);
  // All models, most recently modified first. Models whose config cannot be read are skipped.
  std::vector<ModelSummary> list() const;
  // not_found when absent.
  ModelShow show(const ModelName& name) const;

  // Deletes blobs (rows, then files) that no model references. Returns the digests removed.
  std::vector<Digest> prune();
  // BlobStore::recompress() for a blob with a catalog row, then the row records the file as it
  // now is and the blob is no longer pending recompression (unless `stop` cut it short). A blob
  // removed meanwhile (a delete or prune) stays removed: nullopt.
  std::optional<BlobInfo> recompress_blob(const Digest& digest, std::stop_token stop = {});
  // Makes catalog and files agree after a crash (see RecoveryReport): removes writer temp
  // files, adopts complete blob files that lack a row, drops rows (and the models needing
  // them) whose file is gone, drops download rows whose temp file is gone, and deletes files
  // in blobs/partial whose name starts neither with a live download row's digest file name
  // ("sha256-<hex>", so its .partial and .parts files survive) nor with its temp_path's file
  // name. The constructor runs it only when no other process has the store open.
  RecoveryReport recover();
  // A download that made no progress for this long is abandoned: recover() deletes it.
  static constexpr std::chrono::hours kAbandonedDownloadGrace{24};

  // Copies every model of an Ollama store (manifests/<host>/<ns>/<model>/<tag> and
  // blobs/sha256-<hex>) into this one, verifying each blob's digest; blobs already present
  // are skipped. Bad manifests or blobs are reported, not fatal.
  ImportReport import_ollama_store(const std::filesystem::path& ollama_root,
                                   const StatusCallback& status = {});
  // Whether replacing or removing a model deletes the blobs nothing uses any more (Ollama's
  // OLLAMA_NOPRUNE turns it off; on by default).
  bool prune_enabled() const { return prune_; }
  void set_prune(bool enabled) { prune_ = enabled; }

 private:
  bool prune_ = true;
  // Both expect gc_mutex_ held.
  std::vector<Digest> remove_unused_locked(const std::vector<Digest>& candidates);
  Digest commit_model_locked(const ModelName& name, std::string_view manifest_json,
                             std::optional<Clock::time_point> modified_at, bool prune);

  std::filesystem::path root_;
  std::unique_ptr<BlobStore> blobs_;
  std::unique_ptr<Catalog> catalog_;
  // Serialises model commits against pruning, so a prune cannot delete a blob between a
  // commit's check and its manifest write.
  mutable std::mutex gc_mutex_;
  std::shared_ptr<struct ModelStoreLock> lock_;
  std::shared_ptr<struct ModelStoreLock> writer_lock_;  // claim_sole_writer()
};

}  // namespace vkllm::registry
