// A model's GGUF read straight out of the blob store: the header parsed from the first bytes of
// the (possibly zstd-compressed) blob, and the tensor data streamed through the blob reader's
// parallel frame decompression into the engine's upload staging. No uncompressed copy on disk.
#pragma once

#include <cstdint>
#include <span>

#include "engine/gguf/gguf_file.h"
#include "engine/runtime/tensor_data_source.h"
#include "registry/blob_store.h"

namespace vkllm::sched {

// Reads as much of the blob as its GGUF header needs (growing the prefix until it parses), as
// `layout` views it. Throws gguf::GgufError for a blob that is not a GGUF, registry errors for a
// missing blob.
gguf::GgufFile read_gguf_header(const registry::BlobStore& blobs, const registry::Digest& digest,
                                gguf::ReadLayout layout = gguf::ReadLayout::Translated);

class BlobTensorSource final : public runtime::TensorDataSource {
 public:
  BlobTensorSource(registry::BlobReader reader, uint64_t data_offset);
  void read(uint64_t offset, std::span<std::byte> out) override;
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  registry::BlobReader reader_;
  uint64_t data_offset_;
  uint64_t bytes_read_ = 0;
};

}  // namespace vkllm::sched
