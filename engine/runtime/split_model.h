// A decoder model split across several Vulkan devices, in one of two modes:
// - by layers: each device holds a contiguous run of layers (a pipeline stage: a Model with
//   ModelOptions::layers) with those layers' KV cache; the token embeddings go with the first
//   stage, the output norm and LM head with the last. A Runner made on it (Runner(SplitModel&))
//   runs each step's layers stage after stage, handing the residual stream from one device to the
//   next (engine/runtime/split_backend.h);
// - by rows: each device holds its share of every layer's heads and FFN (a Model with
//   ModelOptions::shard, engine/runtime/row_split.h); the Runner runs each step on all devices
//   at once, summing their partial products twice per layer (engine/runtime/row_split_backend.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
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

enum class SplitMode : uint8_t { Layer, Row };
// "layer" or "row" (VKLLM_SPLIT_MODE); nullopt for anything else.
std::optional<SplitMode> parse_split_mode(std::string_view text);

class SplitModel {
 public:
  static constexpr struct ByRows {
  } by_rows{};

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
  // Split by rows: device i holds row shard i of contexts.size() (ModelOptions::shard). Throws
  // std::runtime_error naming why a model cannot be split so (check_row_split).
  SplitModel(std::span<vk::Context* const> contexts, const gguf::GgufFile& file,
             const SourceFactory& source, ByRows, const ModelOptions& options = {});
  SplitModel(std::span<vk::Context* const> contexts, const gguf::GgufFile& file, ByRows,
             const ModelOptions& options = {});
  SplitModel(const SplitModel&) = delete;
  SplitModel& operator=(const SplitModel&) = delete;

  SplitMode mode() const { return mode_; }
  // The spec each device's graph runs: the model's (by layers) or a device's share of it (by
  // rows: n_head, n_head_kv and n_ff divided by the devices).
  const model::ModelSpec& spec() const { return stages_.front()->spec(); }
  // Stages in order (by layers) or shards (by rows), one per device.
  size_t num_stages() const { return stages_.size(); }
  Model& stage(size_t i) const { return *stages_[i]; }
  // Over every stage (the embeddings counted twice where the first and last stage both hold them:
  // tied embeddings; by rows, once per device).
  uint64_t weight_bytes() const;

 private:
  SplitMode mode_ = SplitMode::Layer;
  std::vector<std::unique_ptr<Model>> stages_;
};

// The split `mode` asks for over the devices: by layers in proportion to `free_bytes` (one entry
// per context, split_layers), or by rows. Throws as the constructors do.
std::unique_ptr<SplitModel> load_split_model(std::span<vk::Context* const> contexts,
                                             const gguf::GgufFile& file,
                                             const SplitModel::SourceFactory& source,
                                             SplitMode mode, std::span<const uint64_t> free_bytes,
                                             const ModelOptions& options = {});

}  // namespace vkllm::runtime
