#include "registry/blob_store.h"

#include <algorithm>
#include <deque>
#include <future>
#include <map>

#include "registry/errors.h"
#include "registry/file_io.h"
#include "registry/seekable_format.h"
#include "registry/sha256.h"
#include "registry/thread_pool.h"
#include "registry/zstd_frame.h"

namespace vkllm::registry {
namespace fs = std::filesystem;

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

}  // namespace vkllm::registry
