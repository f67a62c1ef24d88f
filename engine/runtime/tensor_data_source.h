// Where a model's tensor bytes come from while loading: the mmap'd GGUF file, or (through the
// server) a decompressing reader over a registry blob. Offsets are relative to the GGUF tensor
// data section; reads arrive in increasing offset order, in chunks of any size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/gguf/gguf_file.h"

namespace vkllm::runtime {

class TensorDataSource {
 public:
  virtual ~TensorDataSource() = default;
  // Fills `out` with the bytes at [offset, offset + out.size()) of the data section.
  virtual void read(uint64_t offset, std::span<std::byte> out) = 0;
};

// Reads straight from a GgufFile's mapping.
class GgufFileSource final : public TensorDataSource {
 public:
  explicit GgufFileSource(const gguf::GgufFile& file) : file_(file) {}
  void read(uint64_t offset, std::span<std::byte> out) override;

 private:
  const gguf::GgufFile& file_;
};

}  // namespace vkllm::runtime
