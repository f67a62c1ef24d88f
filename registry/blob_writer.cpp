#include "registry/blob_store.h"

#include <algorithm>
#include <deque>
#include <future>

#include "registry/errors.h"
#include "registry/file_io.h"
#include "registry/seekable_format.h"
#include "registry/sha256.h"
#include "registry/thread_pool.h"
#include "registry/zstd_frame.h"

namespace vkllm::registry {
namespace fs = std::filesystem;

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

}  // namespace vkllm::registry
