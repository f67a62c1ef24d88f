#include "registry/raw_blob_check.h"

#include <sys/stat.h>

#include <vector>

#include "registry/blob_store.h"
#include "registry/errors.h"
#include "registry/file_io.h"
#include "registry/sha256.h"

namespace vkllm::registry {

void RawBlobCheck::verify(const Digest& digest) {
  const auto path = store_.stored_path(digest);
  if (!path) throw RegistryError(ErrorKind::not_found, "blob " + digest.str() + " not found");
  if (path->extension() == ".zst") return;  // its frames carry checksums, checked as they are read

  UniqueFd fd = open_read(*path);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) {
    throw RegistryError(ErrorKind::io, "cannot stat " + path->string());
  }
  const FileIdentity id{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                        static_cast<uint64_t>(st.st_size),
                        int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
  {
    std::lock_guard lock(mutex_);
    auto it = verified_.find(digest.hex());
    if (it != verified_.end() && it->second == id) return;
  }
  Sha256 hash;
  std::vector<std::byte> buffer(size_t{4} << 20);
  uint64_t offset = 0;
  for (;;) {
    const size_t n = pread_full(fd.get(), buffer, offset, *path);
    if (n == 0) break;
    hash.update(std::span<const std::byte>(buffer.data(), n));
    offset += n;
  }
  const Digest actual = hash.finish();
  if (actual != digest) {
    throw RegistryError(ErrorKind::corrupt, "blob " + digest.str() + " is corrupt: its " +
                                                std::to_string(offset) + " bytes on disk hash to " +
                                                actual.str() +
                                                "; remove the model and pull or create it again");
  }
  std::lock_guard lock(mutex_);
  verified_[digest.hex()] = id;
}

}  // namespace vkllm::registry
