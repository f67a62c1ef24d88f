#include "registry/blob_ingest.h"

#include <fcntl.h>

#include <vector>

#include "registry/errors.h"
#include "registry/file_io.h"

namespace vkllm::registry {

BlobIngest::BlobIngest(BlobStore& store, int fd, std::filesystem::path file, uint64_t size,
                       uint64_t available, IngestCompression compression)
    : store_(store),
      fd_(fd),
      file_(std::move(file)),
      size_(size),
      compression_(compression),
      writer_(store.begin_write(BlobHashing::by_caller)),
      available_(std::min(available, size)) {
  writer_->stop_when_raw();
  worker_ = std::thread([this] { run(); });
}

BlobIngest::~BlobIngest() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void BlobIngest::advance(uint64_t contiguous) {
  {
    std::lock_guard lock(mutex_);
    if (contiguous <= available_) return;
    available_ = std::min(contiguous, size_);
  }
  wake_.notify_one();
}

void BlobIngest::run() {
  // Whole frames at a time, so the writer sees the same chunks whatever the download's pace.
  const uint64_t step = store_.options().chunk_size;
  std::vector<std::byte> buffer(step);
  uint64_t done = 0;
  try {
    while (done < size_) {
      uint64_t until;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || available_ >= std::min(size_, done + step); });
        if (stopping_ && available_ < std::min(size_, done + step)) return;
        until = available_;
      }
      while (done < until) {
        const size_t want = static_cast<size_t>(std::min(step, until - done));
        const size_t got = pread_full(fd_, std::span(buffer.data(), want), done, file_);
        if (got != want)
          throw RegistryError(ErrorKind::io, "download file " + file_.string() + " ends early");
        const std::span<const std::byte> bytes(buffer.data(), got);
        hash_.update(bytes);
        if (writer_) {
          writer_->write(bytes);
          const auto decided = writer_->decided_encoding();
          if (decided == BlobEncoding::raw) {
            writer_.reset();  // the downloaded file itself will be stored
          } else if (decided && compression_ == IngestCompression::deferred) {
            worth_recompressing_ = true;
            writer_.reset();
          }
        }
        // Start writing the checked range to disk now, so the fsync before the blob becomes
        // visible finds little left to write (the disk is often slower than the wire).
        ::sync_file_range(fd_, static_cast<off_t>(done), static_cast<off_t>(got),
                          SYNC_FILE_RANGE_WRITE);
        done += got;
      }
    }
  } catch (...) {
    std::lock_guard lock(mutex_);
    error_ = std::current_exception();
  }
}

BlobIngest::Result BlobIngest::finish(const Digest& expected) {
  advance(size_);
  if (worker_.joinable()) worker_.join();
  if (error_) std::rethrow_exception(error_);
  Result result{hash_.finish(), std::nullopt, false};
  if (result.digest != expected) {
    writer_.reset();
    return result;
  }
  if (writer_) {
    result.stored = writer_->commit(expected);
    writer_.reset();
  } else {
    result.stored = store_.adopt_raw(file_, expected);
    result.worth_recompressing = worth_recompressing_;
  }
  return result;
}

}  // namespace vkllm::registry
