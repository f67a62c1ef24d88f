#include "registry/blob_store.h"

#include <algorithm>

#include "registry/errors.h"
#include "registry/file_io.h"
#include "registry/raw_blob_check.h"
#include "registry/seekable_format.h"
#include "registry/thread_pool.h"
#include "registry/zstd_frame.h"

namespace vkllm::registry {
namespace fs = std::filesystem;

std::string_view to_string(BlobEncoding encoding) {
  return encoding == BlobEncoding::raw ? "raw" : "zstd-seekable";
}

BlobEncoding blob_encoding_from_string(std::string_view text) {
  if (text == "raw") return BlobEncoding::raw;
  if (text == "zstd-seekable") return BlobEncoding::zstd_seekable;
  throw RegistryError(ErrorKind::corrupt, "unknown blob encoding \"" + std::string(text) + "\"");
}

BlobStore::BlobStore(fs::path root, BlobStoreOptions options)
    : root_(std::move(root)), options_(options) {
  if (options_.chunk_size == 0 || options_.chunk_size > seekable::kMaxFrameSize)
    throw RegistryError(ErrorKind::invalid_input,
                        "blob chunk size " + std::to_string(options_.chunk_size) +
                            " must be between 1 and " + std::to_string(seekable::kMaxFrameSize));
  unsigned threads = options_.threads;
  if (threads == 0) threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  pool_ = std::make_unique<ThreadPool>(threads);
  raw_check_ = std::make_unique<RawBlobCheck>(*this);
  std::error_code error;
  for (const fs::path& dir : {root_ / "blobs", temp_dir(), partial_dir()}) {
    fs::create_directories(dir, error);
    if (error)
      throw RegistryError(ErrorKind::io, "cannot create " + dir.string() + ": " + error.message());
  }
}

BlobStore::~BlobStore() = default;

void BlobStore::verify(const Digest& digest) const {
  raw_check_->verify(digest);
}

ThreadPool& BlobStore::pool() const {
  return *pool_;
}

fs::path BlobStore::partial_dir() const {
  return root_ / "blobs" / "partial";
}
fs::path BlobStore::temp_dir() const {
  return root_ / "blobs" / "tmp";
}

std::optional<fs::path> BlobStore::stored_path(const Digest& digest) const {
  fs::path base = root_ / "blobs" / digest.file_name();
  fs::path zst = base;
  zst += kZstdSuffix;
  std::error_code error;
  if (fs::is_regular_file(zst, error)) return zst;
  if (fs::is_regular_file(base, error)) return base;
  return std::nullopt;
}

bool BlobStore::contains(const Digest& digest) const {
  return stored_path(digest).has_value();
}

std::optional<BlobInfo> BlobStore::info(const Digest& digest) const {
  auto path = stored_path(digest);
  if (!path) return std::nullopt;
  UniqueFd fd;
  try {
    fd = open_read(*path);
  } catch (const RegistryError&) {
    if (!contains(digest)) return std::nullopt;  // removed meanwhile
    throw;
  }
  uint64_t stored = file_size(fd.get(), *path);
  if (!is_zstd_name(*path)) return BlobInfo{digest, stored, stored, BlobEncoding::raw};
  auto frames = seekable::read_table(fd.get(), stored, *path);
  uint64_t size =
      frames.empty() ? 0 : frames.back().decompressed_offset + frames.back().decompressed_size;
  return BlobInfo{digest, size, stored, BlobEncoding::zstd_seekable};
}

std::optional<Digest> BlobStore::digest_of_file_name(std::string_view name) {
  if (name.ends_with(kZstdSuffix)) name.remove_suffix(kZstdSuffix.size());
  return Digest::try_parse_file_name(name);
}

std::vector<BlobInfo> BlobStore::list() const {
  std::vector<BlobInfo> out;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(root_ / "blobs", error)) {
    if (!entry.is_regular_file()) continue;
    const auto digest = digest_of_file_name(entry.path().filename().string());
    if (!digest) continue;
    if (std::any_of(out.begin(), out.end(), [&](const BlobInfo& b) { return b.digest == *digest; }))
      continue;
    try {
      if (auto blob = info(*digest)) out.push_back(*blob);
    } catch (const RegistryError&) {
      // A damaged file is reported when it is opened; listing goes on.
    }
  }
  return out;
}

BlobInfo BlobStore::put(std::span<const std::byte> bytes, const std::optional<Digest>& expected) {
  if (expected) {
    if (auto existing = info(*expected)) return *existing;
  }
  BlobWriter writer = begin_write();
  writer.write(bytes);
  return expected ? writer.commit(*expected) : writer.commit();
}

BlobInfo BlobStore::put(std::string_view bytes, const std::optional<Digest>& expected) {
  return put(std::as_bytes(std::span(bytes)), expected);
}

BlobInfo BlobStore::put_file(const fs::path& file, const std::optional<Digest>& expected) {
  if (expected) {
    if (auto existing = info(*expected)) return *existing;
  }
  UniqueFd fd = open_read(file);
  BlobWriter writer = begin_write();
  std::vector<std::byte> buffer(options_.chunk_size);
  uint64_t offset = 0;
  for (;;) {
    size_t n = pread_full(fd.get(), buffer, offset, file);
    if (n == 0) break;
    writer.write(std::span(buffer).first(n));
    offset += n;
  }
  return expected ? writer.commit(*expected) : writer.commit();
}

BlobInfo BlobStore::adopt_raw(const fs::path& file, const Digest& verified) {
  UniqueFd fd = open_read(file);
  const uint64_t size = file_size(fd.get(), file);
  if (auto existing = info(verified)) {
    std::error_code ignored;
    fs::remove(file, ignored);
    return *existing;
  }
  fsync_fd(fd.get(), file);
  const fs::path final_path = root_ / "blobs" / verified.file_name();
  std::error_code error;
  fs::rename(file, final_path, error);
  if (error)
    throw RegistryError(ErrorKind::io, "cannot rename " + file.string() + " to " +
                                           final_path.string() + ": " + error.message());
  fsync_directory(final_path.parent_path());
  return BlobInfo{verified, size, size, BlobEncoding::raw};
}

std::vector<std::byte> BlobStore::read(const Digest& digest, uint64_t offset,
                                       uint64_t length) const {
  BlobReader reader = open(digest);
  if (offset >= reader.size()) return {};
  std::vector<std::byte> out(static_cast<size_t>(std::min(length, reader.size() - offset)));
  out.resize(reader.read_at(offset, out));
  return out;
}

std::string BlobStore::read_text(const Digest& digest) const {
  BlobReader reader = open(digest);
  std::string text(static_cast<size_t>(reader.size()), '\0');
  reader.read_at(0, std::as_writable_bytes(std::span(text)));
  return text;
}

void BlobStore::export_to(const Digest& digest, const fs::path& destination) const {
  BlobReader reader = open(digest);
  fs::path parent = destination.parent_path().empty() ? fs::path(".") : destination.parent_path();
  fs::path temp = parent / random_name(".export-", ".tmp");
  try {
    UniqueFd out = create_exclusive(temp);
    std::vector<std::byte> buffer(options_.chunk_size);
    for (;;) {
      size_t n = reader.read(buffer);
      if (n == 0) break;
      write_all(out.get(), std::span(buffer).first(n), temp);
    }
    fsync_fd(out.get(), temp);
    fs::rename(temp, destination);
  } catch (...) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    throw;
  }
}

bool BlobStore::remove(const Digest& digest) {
  fs::path base = root_ / "blobs" / digest.file_name();
  fs::path zst = base;
  zst += kZstdSuffix;
  std::error_code error;
  bool removed = fs::remove(zst, error);
  removed = fs::remove(base, error) || removed;
  if (removed) fsync_directory(root_ / "blobs");
  return removed;
}

size_t BlobStore::remove_temp_files() {
  size_t count = 0;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(temp_dir(), error)) {
    std::error_code ignored;
    if (fs::remove(entry.path(), ignored)) ++count;
  }
  return count;
}

}  // namespace vkllm::registry
