// A base model with a LoRA adapter merged into its weights as they load: W' = W + scale * B A
// for every adapted weight, so both backends run the adapted model with their ordinary kernels
// and no per-token cost. lora_merged_header() is the header the model loads with, and
// LoraMergedSource stands between the base's TensorDataSource and the model's upload, producing
// the merged tensor data that header describes.
//
// Float weights (F32, F16, BF16) keep their type: the merge rounds once to it, as a conversion
// would. A quantized weight is widened to F16 by default, because quantizing W + scale * B A
// again would round the whole matrix anew and move logits by as much as quantization itself
// (measured in tests/engine/lora_test.cpp); LoraMergeOptions::requantize keeps its type instead,
// at that cost in fidelity, for memory.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/lora_adapter.h"
#include "engine/runtime/tensor_data_source.h"

namespace vkllm::runtime {

struct LoraMergeOptions {
  bool requantize = false;  // keep quantized weights' types (re-quantize the merged weight)
  unsigned threads = 0;     // for the merge arithmetic; 0: one per hardware thread
};

// The merged model's header (header-only): the base's metadata and tensors, in the base's data
// order, with adapted quantized weights widened to F16 unless requantizing. Throws
// model::LoraError when the adapter does not fit the base.
gguf::GgufFile lora_merged_header(const gguf::GgufFile& base_header,
                                  const model::LoraAdapter& adapter,
                                  const LoraMergeOptions& options = {});

class LoraMergedSource final : public TensorDataSource {
 public:
  // `merged_header` is lora_merged_header() of the same base, adapter and options. Everything
  // given must outlive this; `base` (the base's tensor data) is read in increasing offsets.
  LoraMergedSource(const gguf::GgufFile& base_header, const gguf::GgufFile& merged_header,
                   TensorDataSource& base, const model::LoraAdapter& adapter,
                   const LoraMergeOptions& options = {});
  ~LoraMergedSource() override;

  // Reads in increasing offsets of the merged header's data section.
  void read(uint64_t offset, std::span<std::byte> out) override;

 private:
  struct Extent;
  void merge(const Extent& e);

  TensorDataSource& base_;
  const model::LoraAdapter& adapter_;
  LoraMergeOptions options_;
  std::vector<Extent> extents_;  // merged layout, in offset order
  size_t cached_ = SIZE_MAX;     // index into extents_ of the tensor in cache_
  std::vector<std::byte> cache_;
};

}  // namespace vkllm::runtime
