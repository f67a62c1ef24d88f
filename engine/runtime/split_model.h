// A decoder model split by layers across several Vulkan devices, each holding a contiguous run of
// layers (a pipeline stage: a Model with ModelOptions::layers) with those layers' KV cache; the
// token embeddings go with the first stage, the output norm and LM head with the last. A Runner
// made on it (Runner(SplitModel&)) runs each step's layers stage after stage, handing the residual
// stream from one device to the next (engine/runtime/split_backend.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"
#include "engine/runtime/model.h"
#include "engine/runtime/tensor_data_source.h"
#include "engine/vulkan/context.h"

namespace vkllm::runtime {

// How many of n_layer layers each of the devices takes, in proportion to its free bytes (largest
// remainders first, ties to the earlier device), at least one each. Throws std::invalid_argument
// for no devices, more devices than layers or no free memory at all.
std::vector<uint32_t> split_layers(uint32_t n_layer, std::span<const uint64_t> free_bytes);

class SplitModel {
 public:
  // Loads stage i (layer_counts[i] layers, in order; they sum to the model's layers) onto
  // contexts[i]. Every stage reads its tensors through a source of its own (`source(i)`, made
  // when the stage loads), since each reads the file's tensor data forward from the start.
  // The same context may appear twice (tests): two stages on one device.
  using SourceFactory = std::function<std::unique_ptr<TensorDataSource>(size_t stage)>;
  SplitModel(std::span<vk::Context* const> contexts, const gguf::GgufFile& file,
             const SourceFactory& source, std::span<const uint32_t> layer_counts,
             const ModelOptions& options = {});
  // Convenience: every stage reads from the mmap'd file itself.
  SplitModel(std::span<vk::Context* const> contexts, const gguf::GgufFile& file,
             std::span<const uint32_t> layer_counts, const ModelOptions& options = {});
  SplitModel(const SplitModel&) = delete;
  SplitModel& operator=(const SplitModel&) = delete;

  const model::ModelSpec& spec() const { return stages_.front()->spec(); }
  size_t num_stages() const { return stages_.size(); }
  Model& stage(size_t i) const { return *stages_[i]; }
  // Over every stage (the embeddings counted twice where the first and last stage both hold them:
  // tied embeddings).
  uint64_t weight_bytes() const;

 private:
  std::vector<std::unique_ptr<Model>> stages_;
};

}  // namespace vkllm::runtime
