#include "registry/catalog.h"

#include <atomic>
#include <mutex>

#include "registry/errors.h"
#include "registry/sqlite_db.h"

namespace vkllm::registry {
namespace {

// Migration N (1-based) brings the schema from version N-1 to N. Append only; never edit one
// that has shipped.
constexpr const char* kMigrations[] = {
    R"sql(
CREATE TABLE blobs(
  digest TEXT PRIMARY KEY,
  size INTEGER NOT NULL,
  stored_size INTEGER NOT NULL,
  encoding TEXT NOT NULL,
  added_at INTEGER NOT NULL);
CREATE TABLE manifests(
  digest TEXT PRIMARY KEY,
  json BLOB NOT NULL);
-- position 0 is the config blob, then the layers in manifest order. The foreign key to blobs
-- makes "a manifest references a blob without a row" impossible at the database level.
CREATE TABLE layers(
  manifest TEXT NOT NULL REFERENCES manifests(digest) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  media_type TEXT NOT NULL,
  digest TEXT NOT NULL REFERENCES blobs(digest) ON DELETE RESTRICT,
  size INTEGER NOT NULL,
  from_model TEXT NOT NULL DEFAULT '',
  name TEXT NOT NULL DEFAULT '',
  PRIMARY KEY(manifest, position));
CREATE INDEX layers_by_digest ON layers(digest);
CREATE TABLE models(
  key TEXT PRIMARY KEY,
  scheme TEXT NOT NULL,
  host TEXT NOT NULL,
  namespace TEXT NOT NULL,
  model TEXT NOT NULL,
  tag TEXT NOT NULL,
  manifest TEXT NOT NULL REFERENCES manifests(digest) ON DELETE RESTRICT,
  modified_at INTEGER NOT NULL);
CREATE INDEX models_by_manifest ON models(manifest);
CREATE TABLE downloads(
  digest TEXT PRIMARY KEY,
  temp_path TEXT NOT NULL,
  total INTEGER NOT NULL,
  bytes_done INTEGER NOT NULL,
  updated_at INTEGER NOT NULL);
)sql",
    // Facts the server derives from a manifest's blobs (what /api/tags shows), so a listing
    // need not re-read them. A manifest's blobs never change, so neither do its facts.
    R"sql(
CREATE TABLE manifest_facts(
  manifest TEXT PRIMARY KEY REFERENCES manifests(digest) ON DELETE CASCADE,
  facts TEXT NOT NULL);
)sql",
    // Blobs a pull stored raw although zstd pays, until the background job has rewritten them:
    // a server stopped first finds them here when it starts again. A removed blob's mark goes
    // with its row.
    R"sql(
CREATE TABLE recompression_pending(
  digest TEXT PRIMARY KEY REFERENCES blobs(digest) ON DELETE CASCADE);
)sql",
};
static_assert(std::size(kMigrations) == Catalog::kSchemaVersion);

int64_t to_ns(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

Clock::time_point from_ns(int64_t ns) {
  return Clock::time_point(
      std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(ns)));
}

BlobInfo blob_from_row(const Statement& s) {
  return BlobInfo{Digest::parse(s.text(0)), static_cast<uint64_t>(s.integer(1)),
                  static_cast<uint64_t>(s.integer(2)), blob_encoding_from_string(s.text(3))};
}

ModelRecord model_from_row(const Statement& s) {
  ModelRecord r;
  r.name.scheme = s.text(0);
  r.name.host = s.text(1);
  r.name.ns = s.text(2);
  r.name.model = s.text(3);
  r.name.tag = s.text(4);
  r.manifest_digest = Digest::parse(s.text(5));
  r.modified_at = from_ns(s.integer(6));
  return r;
}

DownloadRecord download_from_row(const Statement& s) {
  DownloadRecord r;
  r.digest = Digest::parse(s.text(0));
  r.temp_path = s.text(1);
  r.total = static_cast<uint64_t>(s.integer(2));
  r.bytes_done = static_cast<uint64_t>(s.integer(3));
  r.updated_at = from_ns(s.integer(4));
  return r;
}

constexpr const char* kModelColumns =
    "SELECT scheme, host, namespace, model, tag, manifest, modified_at FROM models";

}  // namespace

struct Catalog::Impl {
  explicit Impl(const std::filesystem::path& file) : db(file) {}
  mutable std::mutex mutex;
  SqliteDb db;
  std::atomic<uint64_t> model_writes{0};  // this connection's commits that changed models

  uint64_t references(const Digest& digest) {
    Statement s(db, "SELECT COUNT(*) FROM layers WHERE digest = ?");
    s.bind(1, digest.str());
    s.step();
    return static_cast<uint64_t>(s.integer(0));
  }

  void drop_manifest_if_unused(const std::string& manifest) {
    Statement used(db, "SELECT 1 FROM models WHERE manifest = ? LIMIT 1");
    used.bind(1, manifest);
    if (used.step()) return;
    Statement(db, "DELETE FROM manifests WHERE digest = ?").bind(1, manifest).run();
  }
};

Catalog::Catalog(const std::filesystem::path& db_file) : impl_(std::make_unique<Impl>(db_file)) {
  SqliteDb& db = impl_->db;
  db.exec("PRAGMA journal_mode=WAL");
  db.exec("PRAGMA synchronous=FULL");
  db.exec("PRAGMA foreign_keys=ON");
  db.exec(
      "CREATE TABLE IF NOT EXISTS schema_migrations(version INTEGER PRIMARY KEY, "
      "applied_at INTEGER NOT NULL)");
  int current = schema_version();
  if (current > kSchemaVersion)
    throw RegistryError(ErrorKind::io, "catalog " + db_file.string() + " has schema version " +
                                           std::to_string(current) + ", newer than this build's " +
                                           std::to_string(kSchemaVersion));
  for (int version = current + 1; version <= kSchemaVersion; ++version) {
    Transaction tx(db);
    // Another process may have migrated while we waited for the write lock.
    Statement check(db, "SELECT 1 FROM schema_migrations WHERE version = ?");
    check.bind(1, int64_t{version});
    if (check.step()) continue;
    db.exec(kMigrations[version - 1]);
    Statement(db, "INSERT INTO schema_migrations(version, applied_at) VALUES(?, ?)")
        .bind(1, int64_t{version})
        .bind(2, to_ns(Clock::now()))
        .run();
    tx.commit();
  }
}

Catalog::~Catalog() = default;

int Catalog::schema_version() const {
  std::lock_guard lock(impl_->mutex);
  Statement s(impl_->db, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations");
  s.step();
  return static_cast<int>(s.integer(0));
}

void Catalog::add_blob(const BlobInfo& info) {
  std::lock_guard lock(impl_->mutex);
  Statement(impl_->db,
            "INSERT INTO blobs(digest, size, stored_size, encoding, added_at) VALUES(?,?,?,?,?) "
            "ON CONFLICT(digest) DO UPDATE SET size=excluded.size, "
            "stored_size=excluded.stored_size, encoding=excluded.encoding")
      .bind(1, info.digest.str())
      .bind(2, info.size)
      .bind(3, info.stored_size)
      .bind(4, to_string(info.encoding))
      .bind(5, to_ns(Clock::now()))
      .run();
}

std::optional<BlobInfo> Catalog::find_blob(const Digest& digest) const {
  std::lock_guard lock(impl_->mutex);
  Statement s(impl_->db, "SELECT digest, size, stored_size, encoding FROM blobs WHERE digest = ?");
  s.bind(1, digest.str());
  if (!s.step()) return std::nullopt;
  return blob_from_row(s);
}

std::vector<BlobInfo> Catalog::blobs() const {
  std::lock_guard lock(impl_->mutex);
  Statement s(impl_->db, "SELECT digest, size, stored_size, encoding FROM blobs ORDER BY digest");
  std::vector<BlobInfo> out;
  while (s.step()) out.push_back(blob_from_row(s));
  return out;
}

bool Catalog::remove_blob(const Digest& digest) {
  std::lock_guard lock(impl_->mutex);
  Transaction tx(impl_->db);
  if (uint64_t refs = impl_->references(digest))
    throw RegistryError(ErrorKind::invalid_input, "blob " + digest.str() + " is still used by " +
                                                      std::to_string(refs) + " manifest layer(s)");
  Statement(impl_->db, "DELETE FROM blobs WHERE digest = ?").bind(1, digest.str()).run();
  bool removed = impl_->db.changes() > 0;
  tx.commit();
  return removed;
}

uint64_t Catalog::blob_references(const Digest& digest) const {
  std::lock_guard lock(impl_->mutex);
  return impl_->references(digest);
}

std::vector<Digest> Catalog::unreferenced_blobs() const {
  std::lock_guard lock(impl_->mutex);
  Statement s(impl_->db,
              "SELECT digest FROM blobs WHERE digest NOT IN (SELECT digest FROM layers) "
              "ORDER BY digest");
  std::vector<Digest> out;
  while (s.step()) out.push_back(Digest::parse(s.text(0)));
  return out;
}

void Catalog::mark_recompression_pending(const Digest& digest) {
  std::lock_guard lock(impl_->mutex);
  Statement(impl_->db, "INSERT OR IGNORE INTO recompression_pending(digest) VALUES(?)")
      .bind(1, digest.str())
      .run();
}

void Catalog::clear_recompression_pending(const Digest& digest) {
  std::lock_guard lock(impl_->mutex);
  Statement(impl_->db, "DELETE FROM recompression_pending WHERE digest = ?")
      .bind(1, digest.str())
      .run();
}

std::vector<Digest> Catalog::recompression_pending() const {
  std::lock_guard lock(impl_->mutex);
  Statement s(impl_->db, "SELECT digest FROM recompression_pending ORDER BY digest");
  std::vector<Digest> out;
  while (s.step()) out.push_back(Digest::parse(s.text(0)));
  return out;
}

Digest Catalog::put_model(const ModelName& name, std::string_view manifest_json,
                          std::optional<Clock::time_point> modified_at) {
  Manifest manifest = Manifest::parse(manifest_json);
  Digest manifest_digest = Digest::of(manifest_json);
  std::lock_guard lock(impl_->mutex);
  SqliteDb& db = impl_->db;
  Transaction tx(db);
  for (const Digest& blob : manifest.blob_digests()) {
    Statement s(db, "SELECT 1 FROM blobs WHERE digest = ?");
    s.bind(1, blob.str());
    if (!s.step())
      throw RegistryError(ErrorKind::not_found, "blob \"" + blob.str() + "\" of model " +
                                                    name.display() + " is not in the store");
  }
  Statement insert(db, "INSERT OR IGNORE INTO manifests(digest, json) VALUES(?, ?)");
  insert.bind(1, manifest_digest.str()).bind(2, manifest_json).run();
  if (db.changes() > 0) {
    auto add_layer = [&](int64_t position, const Layer& layer) {
      Statement(db,
                "INSERT INTO layers(manifest, position, media_type, digest, size, from_model, "
                "name) VALUES(?,?,?,?,?,?,?)")
          .bind(1, manifest_digest.str())
          .bind(2, position)
          .bind(3, layer.media_type)
          .bind(4, layer.digest.str())
          .bind(5, layer.size)
          .bind(6, layer.from)
          .bind(7, layer.name)
          .run();
    };
    add_layer(0, manifest.config);
    for (size_t i = 0; i < manifest.layers.size(); ++i)
      add_layer(static_cast<int64_t>(i + 1), manifest.layers[i]);
  }
  std::optional<std::string> previous;
  {
    Statement s(db, "SELECT manifest FROM models WHERE key = ?");
    s.bind(1, name.key());
    if (s.step()) previous = s.text(0);
  }
  // On conflict the stored name keeps the case it was first created with, as Ollama's
  // manifest directories do.
  Statement(db,
            "INSERT INTO models(key, scheme, host, namespace, model, tag, manifest, modified_at) "
            "VALUES(?,?,?,?,?,?,?,?) ON CONFLICT(key) DO UPDATE SET manifest=excluded.manifest, "
            "modified_at=excluded.modified_at")
      .bind(1, name.key())
      .bind(2, name.scheme)
      .bind(3, name.host)
      .bind(4, name.ns)
      .bind(5, name.model)
      .bind(6, name.tag)
      .bind(7, manifest_digest.str())
      .bind(8, to_ns(modified_at.value_or(Clock::now())))
      .run();
  if (previous && *previous != manifest_digest.str()) impl_->drop_manifest_if_unused(*previous);
  tx.commit();
  ++impl_->model_writes;
  return manifest_digest;
}

std::optional<ModelRecord> Catalog::find_model(const ModelName& name) const {
  std::lock_guard lock(impl_->mutex);
  Statement s(impl_->db, (std::string(kModelColumns) + " WHERE key = ?").c_str());
  s.bind(1, name.key());
  if (!s.step()) return std::nullopt;
  return model_from_row(s);
}

std::vector<ModelRecord> Catalog::models() const {
  std::lock_guard lock(impl_->mutex);
  Statement s(impl_->db, (std::string(kModelColumns) + " ORDER BY modified_at DESC, key").c_str());
  std::vector<ModelRecord> out;
  while (s.step()) out.push_back(model_from_row(s));
  return out;
}

bool Catalog::remove_model(const ModelName& name) {
  std::lock_guard lock(impl_->mutex);
  SqliteDb& db = impl_->db;
  Transaction tx(db);
  Statement s(db, "SELECT manifest FROM models WHERE key = ?");
  s.bind(1, name.key());
  if (!s.step()) return false;
  std::string manifest = s.text(0);
  Statement(db, "DELETE FROM models WHERE key = ?").bind(1, name.key()).run();
  impl_->drop_manifest_if_unused(manifest);
  tx.commit();
  ++impl_->model_writes;
  return true;
}

uint64_t Catalog::models_stamp() const {
  std::lock_guard lock(impl_->mutex);
  // data_version moves when another connection (another process) commits; our own commits
  // are counted separately because they do not move it.
  Statement s(impl_->db, "PRAGMA data_version");
  s.step();
  return (static_cast<uint64_t>(s.integer(0)) << 32) + impl_->model_writes;
}

uint64_t Catalog::local_model_writes() const noexcept {
  return impl_->model_writes;
}

std::optional<std::string> Catalog::manifest_facts(const Digest& manifest_digest) const {
  std::lock_guard lock(impl_->mutex);
  Statement s(impl_->db, "SELECT facts FROM manifest_facts WHERE manifest = ?");
  s.bind(1, manifest_digest.str());
  if (!s.step()) return std::nullopt;
  return s.text(0);
}

void Catalog::put_manifest_facts(const Digest& manifest_digest, std::string_view facts) {
  std::lock_guard lock(impl_->mutex);
  // Nothing is stored when the manifest is gone meanwhile (nothing to describe).
  Statement(
      impl_->db,
      "INSERT OR REPLACE INTO manifest_facts(manifest, facts) SELECT digest, ? FROM manifests "
      "WHERE digest = ?")
      .bind(1, facts)
      .bind(2, manifest_digest.str())
      .run();
}

std::optional<std::string> Catalog::manifest(const Digest& manifest_digest) const {
  std::lock_guard lock(impl_->mutex);
  Statement s(impl_->db, "SELECT json FROM manifests WHERE digest = ?");
  s.bind(1, manifest_digest.str());
  if (!s.step()) return std::nullopt;
  return s.text(0);
}

std::vector<Layer> Catalog::manifest_blobs(const Digest& manifest_digest) const {
  std::lock_guard lock(impl_->mutex);
  Statement s(impl_->db,
              "SELECT media_type, digest, size, from_model, name FROM layers WHERE manifest = ? "
              "ORDER BY position");
  s.bind(1, manifest_digest.str());
  std::vector<Layer> out;
  while (s.step())
    out.push_back(Layer{s.text(0), Digest::parse(s.text(1)), static_cast<uint64_t>(s.integer(2)),
                        s.text(3), s.text(4)});
  return out;
}

void Catalog::put_download(const DownloadRecord& record) {
  std::lock_guard lock(impl_->mutex);
  Statement(impl_->db,
            "INSERT INTO downloads(digest, temp_path, total, bytes_done, updated_at) "
            "VALUES(?,?,?,?,?) ON CONFLICT(digest) DO UPDATE SET temp_path=excluded.temp_path, "
            "total=excluded.total, bytes_done=excluded.bytes_done, updated_at=excluded.updated_at")
      .bind(1, record.digest.str())
      .bind(2, record.temp_path.string())
      .bind(3, record.total)
      .bind(4, record.bytes_done)
      .bind(5, to_ns(record.updated_at))
      .run();
}

std::optional<DownloadRecord> Catalog::find_download(const Digest& digest) const {
  std::lock_guard lock(impl_->mutex);
  Statement s(impl_->db,
              "SELECT digest, temp_path, total, bytes_done, updated_at FROM downloads WHERE "
              "digest = ?");
  s.bind(1, digest.str());
  if (!s.step()) return std::nullopt;
  return download_from_row(s);
}

std::vector<DownloadRecord> Catalog::downloads() const {
  std::lock_guard lock(impl_->mutex);
  Statement s(impl_->db,
              "SELECT digest, temp_path, total, bytes_done, updated_at FROM downloads ORDER BY "
              "digest");
  std::vector<DownloadRecord> out;
  while (s.step()) out.push_back(download_from_row(s));
  return out;
}

bool Catalog::remove_download(const Digest& digest) {
  std::lock_guard lock(impl_->mutex);
  Statement(impl_->db, "DELETE FROM downloads WHERE digest = ?").bind(1, digest.str()).run();
  return impl_->db.changes() > 0;
}

}  // namespace vkllm::registry
