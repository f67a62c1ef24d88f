#include "server/scheduler/blob_model_source.h"

#include <algorithm>
#include <string>
#include <vector>

namespace vkllm::sched {

gguf::GgufFile read_gguf_header(const registry::BlobStore& blobs, const registry::Digest& digest,
                                gguf::ReadLayout layout) {
  auto reader = blobs.open(digest);
  const uint64_t size = reader.size();
  // Most headers fit in a few MiB; a 128k-token vocabulary with merges takes ~10 MiB.
  uint64_t want = std::min<uint64_t>(size, uint64_t{4} << 20);
  std::vector<uint8_t> prefix;
  for (;;) {
    const size_t have = prefix.size();
    prefix.resize(want);
    const size_t got =
        reader.read_at(have, std::as_writable_bytes(std::span(prefix)).subspan(have));
    prefix.resize(have + got);
    try {
      return gguf::GgufFile::parse_header(prefix, size, layout);
    } catch (const gguf::GgufError&) {
      if (prefix.size() >= size) throw;  // the whole file was there: a real error
    }
    want = std::min<uint64_t>(size, want * 4);
  }
}

BlobTensorSource::BlobTensorSource(registry::BlobReader reader, uint64_t data_offset)
    : reader_(std::move(reader)), data_offset_(data_offset) {
  reader_.seek(data_offset_);
}

void BlobTensorSource::read(uint64_t offset, std::span<std::byte> out) {
  // Offsets arrive in increasing order, usually contiguous: keep the sequential reader (and its
  // read-ahead decompression) going, and seek only over gaps.
  const uint64_t pos = data_offset_ + offset;
  if (reader_.tell() != pos) reader_.seek(pos);
  size_t done = 0;
  while (done < out.size()) {
    const size_t n = reader_.read(out.subspan(done));
    if (n == 0) {
      throw std::runtime_error("model blob ends at " + std::to_string(pos + done) +
                               " bytes, inside tensor data");
    }
    done += n;
  }
  bytes_read_ += done;
}

}  // namespace vkllm::sched
