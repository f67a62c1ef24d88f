// Hashes and stores a blob while its download is still assembling it. A download writes ranges
// into a raw file in any order; BlobIngest's worker thread follows the contiguous prefix that
// is complete (advance()), hashing it and, while a sample of its frames says zstd pays, feeding
// it to a BlobWriter, so that when the last byte arrives little work is left: a blob that
// compresses too little is already hashed and becomes the stored blob by a rename of the
// downloaded file (BlobStore::adopt_raw), with no copy.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include "registry/blob_store.h"
#include "registry/sha256.h"

namespace vkllm::registry {

enum class IngestCompression {
  inline_,   // compress while downloading when the sample says zstd saves enough
  deferred,  // store raw now; finish() reports that BlobStore::recompress() would pay
};

class BlobIngest {
 public:
  // `file` holds `size` bytes once downloaded; its first `available` bytes are already there
  // (a resumed download). `fd` is an open descriptor of it (read with pread, not owned).
  BlobIngest(BlobStore& store, int fd, std::filesystem::path file, uint64_t size,
             uint64_t available, IngestCompression compression);
  ~BlobIngest();  // stops the worker; nothing is stored
  BlobIngest(const BlobIngest&) = delete;
  BlobIngest& operator=(const BlobIngest&) = delete;

  // The first `contiguous` bytes of the file are complete (called as the download progresses).
  void advance(uint64_t contiguous);

  struct Result {
    Digest digest;                     // what the bytes hash to
    std::optional<BlobInfo> stored;    // set when the digest matched `expected`
    bool worth_recompressing = false;  // deferred: stored raw, but the sample said zstd pays
  };
  // Call once every byte is downloaded: waits for the worker, and when the bytes hash to
  // `expected` stores the blob (the file is renamed into the store or, when compressed,
  // left for the caller to remove). Rethrows the worker's I/O errors.
  Result finish(const Digest& expected);

 private:
  void run();

  BlobStore& store_;
  int fd_;
  std::filesystem::path file_;
  uint64_t size_;
  IngestCompression compression_;
  Sha256 hash_;
  std::optional<BlobWriter> writer_;
  bool worth_recompressing_ = false;

  std::mutex mutex_;
  std::condition_variable wake_;
  uint64_t available_;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::thread worker_;
};

}  // namespace vkllm::registry
