// Content-addressed blob storage under <root>/blobs. A blob is named by the sha256 of its
// uncompressed bytes (so digests match Ollama's registry) and stored either
//   - raw:  blobs/sha256-<hex>        (the original bytes; used when zstd saves too little), or
//   - zstd: blobs/sha256-<hex>.zst    (zstd seekable format: independent frames of
//     chunk_size uncompressed bytes, each with a content checksum, then a seek-table skippable
//     frame; plain `zstd -d` restores the original, and any byte range can be read by
//     decompressing only the frames it touches).
// Writes go to blobs/tmp/, are verified against the expected digest, fsync'd and renamed, so
// a name under blobs/ only ever refers to a complete, verified blob. Thread-safe: any number
// of writers and readers may work concurrently on one BlobStore.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "registry/digest.h"

namespace vkllm::registry {

enum class BlobEncoding { raw, zstd_seekable };
std::string_view to_string(BlobEncoding encoding);  // "raw", "zstd-seekable"
BlobEncoding blob_encoding_from_string(std::string_view text);

struct BlobInfo {
  Digest digest;
  uint64_t size = 0;         // uncompressed bytes (what the digest covers)
  uint64_t stored_size = 0;  // bytes on disk
  BlobEncoding encoding = BlobEncoding::raw;
};

struct BlobStoreOptions {
  size_t chunk_size = size_t{4} << 20;  // uncompressed bytes per zstd frame
  int compression_level = 3;
  // Store raw unless zstd saves at least this fraction. Quantized weights save 1-5% at a cost
  // of ~250 MB/s per core (measured: Q4_K_M 1.5-4.6%, Q8_0 3%, F16 9%), which is not worth
  // halving a pull's speed for.
  double min_saving = 0.05;
  // Blobs longer than sample_frames + 1 frames decide their encoding from frames 1..
  // sample_frames (frame 0 holds a GGUF's metadata and vocabulary, far more compressible than
  // its tensors) and are written raw from then on when the sample saves too little; 0 decides
  // only at commit().
  size_t sample_frames = 8;
  unsigned threads = 0;  // (de)compression workers; 0 = hardware concurrency (max 8)
};

// Who hashes a writer's bytes: the writer (and commit() checks them), or the caller, which
// passes the digest it verified to commit() (a pull hashes while it downloads).
enum class BlobHashing { by_writer, by_caller };

class BlobStore;
class RawBlobCheck;
class ThreadPool;

// Streams one blob into the store. Nothing is visible under the blob's name until commit()
// succeeds; destroying an uncommitted writer (or a failed commit) removes its temp file.
class BlobWriter {
 public:
  BlobWriter(BlobWriter&&) noexcept;
  BlobWriter& operator=(BlobWriter&&) noexcept;
  ~BlobWriter();

  void write(std::span<const std::byte> bytes);
  void write(std::string_view bytes);
  uint64_t bytes_written() const;
  // The encoding chosen so far: nullopt until the sample frames are in (or until commit()).
  std::optional<BlobEncoding> decided_encoding() const;
  // For a caller that has the raw bytes elsewhere (a pull's download file): when the sample
  // decides raw, drop what was written instead of rewriting it raw; the writer can then only
  // be destroyed.
  void stop_when_raw();

  // Verifies the bytes hash to `expected` (BlobHashing::by_caller: trusts it), then makes the
  // blob durable and visible. Throws
  // RegistryError(digest_mismatch, "digest mismatch, expected ..., got ...") and leaves
  // nothing behind on mismatch. If the blob already exists, the new copy is discarded.
  BlobInfo commit(const Digest& expected);
  // Same, for content whose digest is only known once written (create's layers).
  BlobInfo commit();

 private:
  friend class BlobStore;
  struct Impl;
  explicit BlobWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Reads one blob, sequentially or at any offset. Frame checksums are verified as frames are
// decompressed; a damaged frame throws RegistryError(corrupt) naming the blob and offset.
class BlobReader {
 public:
  BlobReader(BlobReader&&) noexcept;
  BlobReader& operator=(BlobReader&&) noexcept;
  ~BlobReader();

  const BlobInfo& info() const;
  uint64_t size() const { return info().size; }
  BlobEncoding encoding() const { return info().encoding; }

  // Sequential reading from the current position; returns bytes read (0 at the end).
  // Sequential reads of zstd blobs decompress the next frames in parallel ahead of use.
  size_t read(std::span<std::byte> out);
  void seek(uint64_t offset);
  uint64_t tell() const;

  // Random access; returns bytes read (short only at the end of the blob). Does not move
  // the sequential position.
  size_t read_at(uint64_t offset, std::span<std::byte> out);

 private:
  friend class BlobStore;
  struct Impl;
  explicit BlobReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class BlobStore {
 public:
  // Creates <root>/blobs (and blobs/tmp) if needed.
  explicit BlobStore(std::filesystem::path root, BlobStoreOptions options = {});
  ~BlobStore();
  BlobStore(const BlobStore&) = delete;
  BlobStore& operator=(const BlobStore&) = delete;

  // The digest a blob file's name stands for ("sha256-<hex>", or "sha256-<hex>.zst" for a
  // compressed one); nullopt for any other name.
  static std::optional<Digest> digest_of_file_name(std::string_view name);

  const std::filesystem::path& root() const { return root_; }
  const BlobStoreOptions& options() const { return options_; }

  bool contains(const Digest& digest) const;
  // Size and encoding from the file (seek table for zstd); nullopt when absent.
  std::optional<BlobInfo> info(const Digest& digest) const;
  // Every complete blob in the store (ignores temp files and unknown names).
  std::vector<BlobInfo> list() const;

  BlobWriter begin_write(BlobHashing hashing = BlobHashing::by_writer);
  // Makes `file`, a complete raw blob on the store's file system whose bytes the caller has
  // hashed to `verified` (a finished download in partial_dir()), the stored blob: fsync and
  // rename, no copy. If the blob already exists, `file` is removed instead.
  BlobInfo adopt_raw(const std::filesystem::path& file, const Digest& verified);
  // Rewrites a raw blob as zstd when that saves at least min_saving over the whole blob (for a
  // background job after a pull stored a compressible blob raw to keep up with the wire);
  // readers see either file, never a gap, and open readers keep reading the raw file. It
  // compresses on the calling thread only, so a background caller can run at a low priority
  // without taking the pool from loads and pulls. `stop` abandons it (the blob stays raw).
  // Returns the blob's info afterwards.
  BlobInfo recompress(const Digest& digest, std::stop_token stop = {});
  // Whole-buffer and whole-file conveniences over begin_write().
  BlobInfo put(std::span<const std::byte> bytes, const std::optional<Digest>& expected = {});
  BlobInfo put(std::string_view bytes, const std::optional<Digest>& expected = {});
  BlobInfo put_file(const std::filesystem::path& file, const std::optional<Digest>& expected = {});

  // Throws RegistryError(not_found) when absent.
  BlobReader open(const Digest& digest) const;
  // Checks the whole blob against its digest before a use that must not see wrong bytes (a
  // model load, serving it to another registry): a raw file is hashed once per process (see
  // raw_blob_check.h); a zstd blob's frames are checked as they are read, so it passes at once.
  // Throws RegistryError(corrupt) naming the blob on a mismatch.
  void verify(const Digest& digest) const;
  // Random access without keeping a reader; short only at the end of the blob.
  std::vector<std::byte> read(const Digest& digest, uint64_t offset, uint64_t length) const;
  // Whole blob as text (for small layers: template, system, params, config, manifests).
  std::string read_text(const Digest& digest) const;
  // Streams the blob's original bytes into a plain file (used to hand a path to tools that
  // need one). The file is written to a temp name and renamed.
  void export_to(const Digest& digest, const std::filesystem::path& destination) const;

  // Removes the blob's file; returns false if it was absent.
  bool remove(const Digest& digest);

  // Where the stored file for a blob lives (whichever encoding exists); nullopt when absent.
  std::optional<std::filesystem::path> stored_path(const Digest& digest) const;
  // Directory for in-progress downloads (<root>/blobs/partial), for resumable pulls that
  // assemble a raw file by ranges before handing it to put_file().
  std::filesystem::path partial_dir() const;
  // Directory of writer temp files (<root>/blobs/tmp).
  std::filesystem::path temp_dir() const;
  // Deletes writer temp files left by a crash (never touches partial_dir()). Returns how many.
  size_t remove_temp_files();

  ThreadPool& pool() const;

 private:
  std::filesystem::path root_;
  BlobStoreOptions options_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<RawBlobCheck> raw_check_;
};

}  // namespace vkllm::registry
