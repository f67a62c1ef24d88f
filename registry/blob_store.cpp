#include "registry/blob_store.h"

#include <zstd.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <future>
#include <map>

#include "registry/env_value.h"
#include "registry/errors.h"
#include "registry/file_io.h"
#include "registry/seekable_format.h"
#include "registry/sha256.h"
#include "registry/thread_pool.h"

namespace vkllm::registry {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kZstdSuffix = ".zst";

struct CCtxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DCtxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

std::vector<std::byte> compress_frame(std::span<const std::byte> input, int level) {
  thread_local std::unique_ptr<ZSTD_CCtx, CCtxDeleter> ctx{ZSTD_createCCtx()};
  ZSTD_CCtx_reset(ctx.get(), ZSTD_reset_session_and_parameters);
  ZSTD_CCtx_setParameter(ctx.get(), ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(ctx.get(), ZSTD_c_checksumFlag, 1);
  ZSTD_CCtx_setParameter(ctx.get(), ZSTD_c_contentSizeFlag, 1);
  std::vector<std::byte> out(ZSTD_compressBound(input.size()));
  size_t n = ZSTD_compress2(ctx.get(), out.data(), out.size(), input.data(), input.size());
  if (ZSTD_isError(n))
    throw RegistryError(ErrorKind::io,
                        std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

// Reads and decompresses one frame, checking that it is exactly one complete zstd frame of
// the size the seek table promises (zstd itself verifies the frame's content checksum).
std::vector<std::byte> decompress_frame(int fd, const fs::path& path, const seekable::Frame& f,
                                        size_t index) {
  auto corrupt = [&](const std::string& why) {
    throw RegistryError(ErrorKind::corrupt, "corrupt blob " + path.string() + ": frame " +
                                                std::to_string(index) + " at offset " +
                                                std::to_string(f.compressed_offset) + ": " + why);
  };
  std::vector<std::byte> compressed(f.compressed_size);
  if (pread_full(fd, compressed, f.compressed_offset, path) != compressed.size())
    corrupt("file ends early");
  if (ZSTD_findFrameCompressedSize(compressed.data(), compressed.size()) != compressed.size())
    corrupt("not one complete zstd frame of " + std::to_string(f.compressed_size) + " bytes");
  unsigned long long content = ZSTD_getFrameContentSize(compressed.data(), compressed.size());
  if (content != f.decompressed_size) corrupt("frame header size disagrees with the seek table");
  thread_local std::unique_ptr<ZSTD_DCtx, DCtxDeleter> ctx{ZSTD_createDCtx()};
  std::vector<std::byte> out(f.decompressed_size);
  size_t n =
      ZSTD_decompressDCtx(ctx.get(), out.data(), out.size(), compressed.data(), compressed.size());
  if (ZSTD_isError(n)) corrupt(ZSTD_getErrorName(n));
  if (n != out.size()) corrupt("decompressed to " + std::to_string(n) + " bytes");
  return out;
}

bool is_zstd_name(const fs::path& p) {
  return p.extension() == kZstdSuffix;
}

}  // namespace

std::string_view to_string(BlobEncoding encoding) {
  return encoding == BlobEncoding::raw ? "raw" : "zstd-seekable";
}

BlobEncoding blob_encoding_from_string(std::string_view text) {
  if (text == "raw") return BlobEncoding::raw;
  if (text == "zstd-seekable") return BlobEncoding::zstd_seekable;
  throw RegistryError(ErrorKind::corrupt, "unknown blob encoding \"" + std::string(text) + "\"");
}

// ---------------------------------------------------------------------------------------------
// Writer

struct BlobWriter::Impl {
  const BlobStore* store = nullptr;
  fs::path temp_path;
  UniqueFd fd;
  bool hashing = true;
  Sha256 hash;
  std::vector<std::byte> chunk;
  std::deque<std::future<std::vector<std::byte>>> pending;
  std::vector<seekable::FrameSizes> frames;  // decompressed sizes known at submit time
  size_t frames_written = 0;
  uint64_t total = 0;
  uint64_t stored = 0;
  size_t sample_frames = 0;
  std::optional<BlobEncoding> decided;
  bool replace_raw = false;    // recompress(): the blob exists raw and this copy replaces it
  bool compress_here = false;  // recompress(): frames are compressed on the writer's thread
  bool stop_when_raw = false;
  bool finished = false;

  ~Impl() {
    for (auto& f : pending) f.wait();
    if (!finished && !temp_path.empty()) {
      std::error_code ignored;
      fs::remove(temp_path, ignored);
    }
  }

  bool raw_mode() const { return decided == BlobEncoding::raw; }

  void write_next_frame() {
    auto bytes = pending.front().get();
    pending.pop_front();
    write_all(fd.get(), bytes, temp_path);
    frames[frames_written++].compressed = static_cast<uint32_t>(bytes.size());
    stored += bytes.size();
  }

  void submit_chunk() {
    if (chunk.empty()) return;
    frames.push_back({0, static_cast<uint32_t>(chunk.size())});
    int level = store->options().compression_level;
    if (compress_here) {
      std::promise<std::vector<std::byte>> done;
      done.set_value(compress_frame(chunk, level));
      pending.push_back(done.get_future());
    } else {
      pending.push_back(store->pool().submit(
          [data = std::move(chunk), level] { return compress_frame(data, level); }));
    }
    chunk = {};
    chunk.reserve(store->options().chunk_size);
    while (pending.size() > 2 * store->pool().size()) write_next_frame();
    if (!decided && sample_frames > 0 && frames.size() > sample_frames) decide_from_sample();
  }

  // Frames 1..sample_frames are in: keep compressing, or write raw from here on.
  void decide_from_sample() {
    while (frames_written <= sample_frames) write_next_frame();
    uint64_t raw = 0, packed = 0;
    for (size_t i = 1; i <= sample_frames; ++i) {
      raw += frames[i].decompressed;
      packed += frames[i].compressed;
    }
    if (static_cast<double>(packed) <= static_cast<double>(raw) * (1.0 - min_saving())) {
      decided = BlobEncoding::zstd_seekable;
      return;
    }
    decided = BlobEncoding::raw;
    if (stop_when_raw) {
      discard();
      return;
    }
    while (!pending.empty()) write_next_frame();
    convert_to_raw();
  }

  double min_saving() const { return store->options().min_saving; }

  void discard() {
    for (auto& f : pending) f.wait();
    pending.clear();
    fd = UniqueFd();
    std::error_code ignored;
    fs::remove(temp_path, ignored);
    finished = true;
  }

  // Rewrites the frames written so far as raw bytes (zstd did not save enough).
  void convert_to_raw() {
    std::vector<seekable::Frame> table;
    uint64_t compressed_at = 0, decompressed_at = 0;
    for (size_t i = 0; i < frames_written; ++i) {
      table.push_back(
          {compressed_at, decompressed_at, frames[i].compressed, frames[i].decompressed});
      compressed_at += frames[i].compressed;
      decompressed_at += frames[i].decompressed;
    }
    fs::path raw_path = store->temp_dir() / random_name("", ".tmp");
    UniqueFd raw = create_exclusive(raw_path);
    try {
      const size_t batch = std::max<size_t>(1, store->pool().size());
      for (size_t first = 0; first < table.size(); first += batch) {
        std::vector<std::future<std::vector<std::byte>>> parts;
        for (size_t i = first; i < std::min(table.size(), first + batch); ++i)
          parts.push_back(store->pool().submit(
              [this, &table, i] { return decompress_frame(fd.get(), temp_path, table[i], i); }));
        for (auto& p : parts) write_all(raw.get(), p.get(), raw_path);
      }
    } catch (...) {
      std::error_code ignored;
      fs::remove(raw_path, ignored);
      throw;
    }
    std::error_code ignored;
    fs::remove(temp_path, ignored);
    temp_path = raw_path;
    fd = std::move(raw);
    stored = decompressed_at;
  }

  BlobInfo commit(const std::optional<Digest>& expected) {
    if (finished) throw RegistryError(ErrorKind::invalid_input, "blob writer already finished");
    if (!hashing && !expected)
      throw RegistryError(ErrorKind::invalid_input, "a caller-hashed blob needs its digest");
    try {
      BlobEncoding encoding = BlobEncoding::raw;
      if (raw_mode()) {
        write_all(fd.get(), chunk, temp_path);  // nothing is buffered in raw mode; for safety
        stored = total;
      } else {
        submit_chunk();
        while (!pending.empty()) write_next_frame();
      }
      Digest digest = hashing ? hash.finish() : *expected;
      if (expected && *expected != digest) {
        discard();
        throw RegistryError(
            ErrorKind::digest_mismatch,
            "digest mismatch, expected \"" + expected->str() + "\", got \"" + digest.str() + "\"");
      }
      if (!raw_mode()) {
        auto table = seekable::encode_table(frames);
        write_all(fd.get(), table, temp_path);
        stored += table.size();
        encoding = BlobEncoding::zstd_seekable;
        const double limit = static_cast<double>(total) * (1.0 - min_saving());
        if (total == 0 || static_cast<double>(stored) > limit) {
          convert_to_raw();
          encoding = BlobEncoding::raw;
        }
      }
      decided = encoding;
      auto existing = store->info(digest);
      if (existing && !(replace_raw && encoding != BlobEncoding::raw)) {
        discard();
        return *existing;
      }
      fsync_fd(fd.get(), temp_path);
      fd = UniqueFd();
      const fs::path base = store->root() / "blobs" / digest.file_name();
      fs::path final_path = base;
      if (encoding != BlobEncoding::raw) final_path += kZstdSuffix;
      std::error_code error;
      fs::rename(temp_path, final_path, error);
      if (error)
        throw RegistryError(ErrorKind::io, "cannot rename " + temp_path.string() + " to " +
                                               final_path.string() + ": " + error.message());
      finished = true;
      // Readers look for the .zst first, so the raw copy can go once the new file is in place.
      if (replace_raw) fs::remove(base, error);
      fsync_directory(final_path.parent_path());
      return BlobInfo{digest, total, stored, encoding};
    } catch (...) {
      if (!finished) discard();
      throw;
    }
  }
};

BlobWriter::BlobWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BlobWriter::BlobWriter(BlobWriter&&) noexcept = default;
BlobWriter& BlobWriter::operator=(BlobWriter&&) noexcept = default;
BlobWriter::~BlobWriter() = default;

void BlobWriter::write(std::span<const std::byte> bytes) {
  Impl& w = *impl_;
  if (w.finished) throw RegistryError(ErrorKind::invalid_input, "blob writer already finished");
  if (w.hashing) w.hash.update(bytes);
  w.total += bytes.size();
  const size_t chunk_size = w.store->options().chunk_size;
  while (!bytes.empty()) {
    if (w.finished) return;  // stopped when the sample said raw
    if (w.raw_mode()) {
      write_all(w.fd.get(), bytes, w.temp_path);
      w.stored += bytes.size();
      return;
    }
    size_t take = std::min(bytes.size(), chunk_size - w.chunk.size());
    w.chunk.insert(w.chunk.end(), bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(take));
    bytes = bytes.subspan(take);
    if (w.chunk.size() == chunk_size) w.submit_chunk();
  }
}

void BlobWriter::write(std::string_view bytes) {
  write(std::as_bytes(std::span(bytes)));
}

uint64_t BlobWriter::bytes_written() const {
  return impl_->total;
}

std::optional<BlobEncoding> BlobWriter::decided_encoding() const {
  return impl_->decided;
}

void BlobWriter::stop_when_raw() {
  impl_->stop_when_raw = true;
}

BlobInfo BlobWriter::commit(const Digest& expected) {
  return impl_->commit(expected);
}

BlobInfo BlobWriter::commit() {
  return impl_->commit(std::nullopt);
}

// ---------------------------------------------------------------------------------------------
// Reader

struct BlobReader::Impl {
  BlobInfo info;
  fs::path path;
  std::shared_ptr<UniqueFd> fd;
  std::vector<seekable::Frame> frames;
  ThreadPool* pool = nullptr;
  uint64_t position = 0;
  size_t cached_index = SIZE_MAX;
  std::vector<std::byte> cached;
  std::map<size_t, std::future<std::vector<std::byte>>> prefetch;

  ~Impl() {
    for (auto& [index, f] : prefetch) f.wait();
  }

  size_t frame_of(uint64_t offset) const {
    auto it = std::upper_bound(
        frames.begin(), frames.end(), offset,
        [](uint64_t off, const seekable::Frame& f) { return off < f.decompressed_offset; });
    return static_cast<size_t>(it - frames.begin()) - 1;
  }

  std::future<std::vector<std::byte>> schedule(size_t index) {
    return pool->submit([file = fd, p = path, f = frames[index], index] {
      return decompress_frame(file->get(), p, f, index);
    });
  }

  const std::vector<std::byte>& frame(size_t index, bool sequential) {
    if (index != cached_index) {
      if (auto it = prefetch.find(index); it != prefetch.end()) {
        auto future = std::move(it->second);
        prefetch.erase(it);
        cached_index = SIZE_MAX;
        cached = future.get();
      } else {
        cached_index = SIZE_MAX;
        cached = decompress_frame(fd->get(), path, frames[index], index);
      }
      cached_index = index;
    }
    if (sequential) {
      // Drop read-ahead that a seek left behind, then keep the next frames in flight.
      for (auto it = prefetch.begin(); it != prefetch.end();) {
        if (it->first <= index || it->first > index + pool->size()) {
          it->second.wait();
          it = prefetch.erase(it);
        } else {
          ++it;
        }
      }
      for (size_t next = index + 1; next <= index + pool->size() && next < frames.size(); ++next)
        if (!prefetch.contains(next)) prefetch.emplace(next, schedule(next));
    }
    return cached;
  }

  size_t read_at(uint64_t offset, std::span<std::byte> out, bool sequential) {
    if (offset >= info.size || out.empty()) return 0;
    size_t want = static_cast<size_t>(std::min<uint64_t>(out.size(), info.size - offset));
    if (info.encoding == BlobEncoding::raw) {
      size_t n = pread_full(fd->get(), out.first(want), offset, path);
      if (n != want)
        throw RegistryError(ErrorKind::corrupt, "blob " + path.string() + " is shorter than its " +
                                                    std::to_string(info.size) + " bytes");
      return n;
    }
    size_t done = 0;
    while (done < want) {
      uint64_t at = offset + done;
      size_t index = frame_of(at);
      const auto& data = frame(index, sequential);
      size_t inside = static_cast<size_t>(at - frames[index].decompressed_offset);
      size_t take = std::min(want - done, data.size() - inside);
      std::copy_n(data.begin() + static_cast<ptrdiff_t>(inside), take, out.begin() + done);
      done += take;
    }
    return done;
  }
};

BlobReader::BlobReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BlobReader::BlobReader(BlobReader&&) noexcept = default;
BlobReader& BlobReader::operator=(BlobReader&&) noexcept = default;
BlobReader::~BlobReader() = default;

const BlobInfo& BlobReader::info() const {
  return impl_->info;
}

size_t BlobReader::read(std::span<std::byte> out) {
  size_t n = impl_->read_at(impl_->position, out, true);
  impl_->position += n;
  return n;
}

void BlobReader::seek(uint64_t offset) {
  impl_->position = std::min(offset, impl_->info.size);
}

uint64_t BlobReader::tell() const {
  return impl_->position;
}

size_t BlobReader::read_at(uint64_t offset, std::span<std::byte> out) {
  return impl_->read_at(offset, out, false);
}

// ---------------------------------------------------------------------------------------------
// Store

BlobStore::BlobStore(fs::path root, BlobStoreOptions options)
    : root_(std::move(root)), options_(options) {
  if (options_.chunk_size == 0 || options_.chunk_size > seekable::kMaxFrameSize)
    throw RegistryError(ErrorKind::invalid_input,
                        "blob chunk size " + std::to_string(options_.chunk_size) +
                            " must be between 1 and " + std::to_string(seekable::kMaxFrameSize));
  unsigned threads = options_.threads;
  if (threads == 0) threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  pool_ = std::make_unique<ThreadPool>(threads);
  std::error_code error;
  for (const fs::path& dir : {root_ / "blobs", temp_dir(), partial_dir()}) {
    fs::create_directories(dir, error);
    if (error)
      throw RegistryError(ErrorKind::io, "cannot create " + dir.string() + ": " + error.message());
  }
}

BlobStore::~BlobStore() = default;

fs::path BlobStore::default_root() {
  std::string models = env_value("OLLAMA_MODELS");
  if (!models.empty()) return fs::path(models);
  std::string home = env_value("HOME");
  if (home.empty()) home = ".";
  return fs::path(home) / ".vkllm" / "models";
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

std::vector<BlobInfo> BlobStore::list() const {
  std::vector<BlobInfo> out;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(root_ / "blobs", error)) {
    if (!entry.is_regular_file()) continue;
    std::string name = entry.path().filename().string();
    if (name.ends_with(kZstdSuffix)) name.resize(name.size() - kZstdSuffix.size());
    if (!name.starts_with("sha256-")) continue;
    auto digest = Digest::try_parse("sha256:" + name.substr(7));
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

BlobWriter BlobStore::begin_write(BlobHashing hashing) {
  auto impl = std::make_unique<BlobWriter::Impl>();
  impl->store = this;
  impl->hashing = hashing == BlobHashing::by_writer;
  impl->sample_frames = options_.sample_frames;
  impl->temp_path = temp_dir() / random_name("", ".tmp");
  impl->fd = create_exclusive(impl->temp_path);
  impl->chunk.reserve(options_.chunk_size);
  return BlobWriter(std::move(impl));
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

BlobInfo BlobStore::recompress(const Digest& digest, std::stop_token stop) {
  auto current = info(digest);
  if (!current)
    throw RegistryError(ErrorKind::not_found, "blob \"" + digest.str() + "\" not found");
  if (current->encoding != BlobEncoding::raw) return *current;
  BlobReader reader = open(digest);
  BlobWriter writer = begin_write();
  writer.impl_->sample_frames = 0;  // judged on the whole blob
  writer.impl_->replace_raw = true;
  writer.impl_->compress_here = true;
  std::vector<std::byte> buffer(options_.chunk_size);
  for (;;) {
    if (stop.stop_requested()) return *current;  // the writer removes its temp file
    size_t n = reader.read(buffer);
    if (n == 0) break;
    writer.write(std::span(buffer).first(n));
  }
  return writer.commit(digest);
}

BlobReader BlobStore::open(const Digest& digest) const {
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto path = stored_path(digest);
    if (!path) break;
    auto impl = std::make_unique<BlobReader::Impl>();
    try {
      impl->fd = std::make_shared<UniqueFd>(open_read(*path));
    } catch (const RegistryError&) {
      continue;  // removed between the lookup and the open; look again
    }
    impl->path = *path;
    impl->pool = pool_.get();
    uint64_t stored = file_size(impl->fd->get(), *path);
    if (is_zstd_name(*path)) {
      impl->frames = seekable::read_table(impl->fd->get(), stored, *path);
      uint64_t size = impl->frames.empty() ? 0
                                           : impl->frames.back().decompressed_offset +
                                                 impl->frames.back().decompressed_size;
      impl->info = BlobInfo{digest, size, stored, BlobEncoding::zstd_seekable};
    } else {
      impl->info = BlobInfo{digest, stored, stored, BlobEncoding::raw};
    }
    return BlobReader(std::move(impl));
  }
  throw RegistryError(ErrorKind::not_found, "blob \"" + digest.str() + "\" not found");
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
