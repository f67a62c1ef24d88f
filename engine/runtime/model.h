// A model resident on the device: its ModelSpec and every weight tensor in device-local arenas,
// uploaded once through a staging ring from a TensorDataSource.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"
#include "engine/model/weight_names.h"
#include "engine/runtime/tensor_data_source.h"
#include "engine/vulkan/context.h"

namespace vkllm::runtime {

// A run of whole rows of a tensor stored in its own slice (with the kernels' read slack).
struct RowPart {
  vk::BufferSlice data;
  uint32_t first_row = 0;
  uint32_t rows = 0;
};

struct DeviceTensor {
  std::string name;
  gguf::TensorType type{};
  std::vector<uint64_t> shape;  // ggml order: shape[0] contiguous
  // The whole tensor; empty when it is larger than one storage-buffer binding (or one arena
  // block) and was split by rows into `parts` (engine/runtime/weight_ops.h records over them).
  vk::BufferSlice data;
  std::vector<RowPart> parts;  // in row order; one part (== data) unless split
  // Where its bytes lie in the file (TensorInfo::offset; kFused for a stack of several tensors,
  // none for derived ones), which tells ModelOptions::share_from the same tensor.
  static constexpr uint64_t kFused = ~uint64_t{0};
  uint64_t file_offset = kFused;
  uint64_t cols() const { return shape[0]; }
  uint64_t rows() const { return shape.size() > 1 ? shape[1] : 1; }
};

// The layers a Model holds: all of them, or one pipeline stage of a model split across devices
// (engine/runtime/split_model.h).
struct LayerRange {
  uint32_t first = 0;
  uint32_t end = UINT32_MAX;  // one past the last; clamped to the model's layers
  bool contains(uint32_t layer) const { return layer >= first && layer < end; }
};

// One device's share of a model split by rows (engine/runtime/row_split.h): device `index` of
// `count`; count 1 is the whole model.
struct RowShard {
  uint32_t index = 0;
  uint32_t count = 1;
  bool split() const { return count > 1; }
};

struct ModelOptions {
  // Stack Q|K|V and gate|up into one tensor each where they fit (engine/runtime/weight_fusion.h).
  bool fuse_weights = true;
  // A stage holds its layers' weights, the token embeddings only with layer 0 and the output
  // norm and LM head (the embeddings again when tied) only with the last layer; tensors of no
  // layer (rope factors) go with every stage.
  LayerRange layers;
  // A device's share of every layer's heads and FFN (row split); the output norm and LM head
  // only with shard 0. Not with `layers`.
  RowShard shard;
  // Tensors this model holds under the same name, type and shape from the same place in the same
  // file are used from there instead of uploaded again (a multi-token-prediction block's embeddings
  // and LM head, the model's own: engine/model/nextn_head.h); it must outlive this model.
  const class Model* share_from = nullptr;
};

class Model {
 public:
  // Uploads the weights of `file` (metadata and tensor table) read through `source`.
  Model(vk::Context& ctx, const gguf::GgufFile& file, TensorDataSource& source,
        const ModelOptions& options = {});
  // Convenience: everything from the mmap'd file itself.
  Model(vk::Context& ctx, const gguf::GgufFile& file, const ModelOptions& options = {});
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // The file's spec, with fused_qkv / fused_gate_up set where the load fused those weights; a
  // row shard's has its share of the heads and FFN rows (row_shard_spec).
  const model::ModelSpec& spec() const { return spec_; }
  vk::Context& context() const { return *ctx_; }
  // The weight, or nullptr when the model does not have it (e.g. biases).
  const DeviceTensor* find(model::Weight w, uint32_t layer = 0) const;
  // The weight; throws naming it when absent.
  const DeviceTensor& get(model::Weight w, uint32_t layer = 0) const;
  // The projection to logits (output.weight, or the embeddings when tied).
  const DeviceTensor& output() const;
  uint64_t weight_bytes() const { return weight_bytes_; }
  // The layers whose weights this Model holds (all unless it is a stage of a split model).
  const LayerRange& layers() const { return layers_; }
  bool is_stage() const { return layers_.first > 0 || layers_.end < spec_.n_layer; }
  bool has_embeddings() const { return layers_.first == 0; }
  bool has_output() const { return layers_.end >= spec_.n_layer && shard_.index == 0; }
  // The share of the model this one holds when split by rows (count 1: not split so).
  const RowShard& shard() const { return shard_; }
  // Bytes of the tensors used from ModelOptions::share_from (not in weight_bytes()).
  uint64_t shared_bytes() const { return shared_bytes_; }

 private:
  // Whether this Model (a stage or the whole) holds the file's tensor `name`.
  bool holds(const std::string& name) const;

  LayerRange layers_;
  RowShard shard_;
  vk::Context* ctx_;
  model::ModelSpec spec_;
  std::vector<vk::Arena> arenas_;
  std::unordered_map<std::string, DeviceTensor> tensors_;
  // find()'s answers by (layer, weight), built once: the graph asks ~20 times per layer and step.
  std::vector<const DeviceTensor*> by_weight_;
  uint64_t weight_bytes_ = 0;
  uint64_t shared_bytes_ = 0;
};

}  // namespace vkllm::runtime
