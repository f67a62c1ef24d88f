// The store's index: a SQLite database at <root>/catalog.db (WAL, busy timeout, versioned
// migrations in schema_migrations). It records which blobs exist, the verbatim manifest bytes,
// their layers, which model name points at which manifest, and in-progress downloads.
//
// Invariants kept by its transactions, so a crash at any point leaves it consistent:
//   - a blob row is added only after the blob file is durable (callers: BlobWriter::commit,
//     then add_blob);
//   - put_model() commits a model only if every blob its manifest references has a row.
// Safe to use from many threads (one connection, serialised by a mutex).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "registry/blob_store.h"
#include "registry/digest.h"
#include "registry/manifest.h"
#include "registry/model_name.h"

namespace vkllm::registry {

using Clock = std::chrono::system_clock;

struct ModelRecord {
  ModelName name;  // with the case it was first created with
  Digest manifest_digest;
  Clock::time_point modified_at;
};

struct DownloadRecord {
  Digest digest;
  std::filesystem::path temp_path;
  uint64_t total = 0;
  uint64_t bytes_done = 0;
  Clock::time_point updated_at;
};

class Catalog {
 public:
  static constexpr int kSchemaVersion = 3;

  // Opens or creates the database and applies pending migrations.
  explicit Catalog(const std::filesystem::path& db_file);
  ~Catalog();
  Catalog(const Catalog&) = delete;
  Catalog& operator=(const Catalog&) = delete;

  int schema_version() const;

  // --- blobs ---
  void add_blob(const BlobInfo& info);  // upsert
  std::optional<BlobInfo> find_blob(const Digest& digest) const;
  std::vector<BlobInfo> blobs() const;
  // Removes the row; refuses with RegistryError(invalid_input) while a manifest of a model
  // references it, so the no-dangling-model invariant cannot be broken by a caller.
  bool remove_blob(const Digest& digest);
  // How many stored manifests (config or layer) reference the blob.
  uint64_t blob_references(const Digest& digest) const;
  // Blob rows no manifest references.
  std::vector<Digest> unreferenced_blobs() const;
  // Blobs stored raw that the background recompression still owes zstd (a pull's deferred
  // compression). Marking needs the blob's row; removing the row clears its mark.
  void mark_recompression_pending(const Digest& digest);
  void clear_recompression_pending(const Digest& digest);
  std::vector<Digest> recompression_pending() const;

  // --- models and manifests ---
  // Stores the manifest bytes verbatim (its digest is their sha256), its layers, and points
  // the name at it, replacing what the name (matched case-insensitively) pointed at before.
  // Throws RegistryError(not_found) naming the first referenced blob without a row.
  // Returns the manifest digest.
  Digest put_model(const ModelName& name, std::string_view manifest_json,
                   std::optional<Clock::time_point> modified_at = {});
  // Case-insensitive lookup.
  std::optional<ModelRecord> find_model(const ModelName& name) const;
  // All models, most recently modified first.
  std::vector<ModelRecord> models() const;
  // Removes the name; its manifest rows go too when no other name points at them. Returns
  // false when the name was not present.
  bool remove_model(const ModelName& name);
  // Changes whenever the set of models or what a name points at may have changed, by this
  // process or another one; equal stamps mean models() would answer the same.
  uint64_t models_stamp() const;
  // This process's share of that: changes whenever this Catalog changed models. Lock-free.
  uint64_t local_model_writes() const noexcept;
  // Derived facts about a manifest's content, stored by whoever computed them (the server
  // keeps what /api/tags shows); they go with the manifest's row.
  std::optional<std::string> manifest_facts(const Digest& manifest_digest) const;
  void put_manifest_facts(const Digest& manifest_digest, std::string_view facts);
  // Verbatim manifest bytes.
  std::optional<std::string> manifest(const Digest& manifest_digest) const;
  // Config first, then the manifest's layers in order.
  std::vector<Layer> manifest_blobs(const Digest& manifest_digest) const;

  // --- in-progress downloads ---
  void put_download(const DownloadRecord& record);  // upsert by digest
  std::optional<DownloadRecord> find_download(const Digest& digest) const;
  std::vector<DownloadRecord> downloads() const;
  bool remove_download(const Digest& digest);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkllm::registry
