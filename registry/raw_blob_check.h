// Raw blobs carry no checksum of their own (a zstd blob's frames do), so a raw file changed on
// disk (a flipped bit, a truncation, an edit) would be read as good. Before a model loads from a
// raw blob, or the registry view serves one, its bytes are hashed against its digest once per
// process; later uses of the same unchanged file (same inode, size and modification time) skip
// the hash.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "registry/digest.h"

namespace vkllm::registry {

class BlobStore;

class RawBlobCheck {
 public:
  explicit RawBlobCheck(const BlobStore& store) : store_(store) {}

  // Nothing to do for a zstd blob or a raw file already verified; otherwise hashes the raw
  // file. Throws RegistryError(corrupt) naming the blob when its bytes do not hash to its
  // digest, RegistryError(not_found) when it is absent. Thread-safe.
  void verify(const Digest& digest);

 private:
  struct FileIdentity {
    uint64_t device = 0, inode = 0, size = 0;
    int64_t mtime_ns = 0;
    bool operator==(const FileIdentity&) const = default;
  };
  const BlobStore& store_;
  std::mutex mutex_;
  std::map<std::string, FileIdentity> verified_;  // by digest hex
};

}  // namespace vkllm::registry
