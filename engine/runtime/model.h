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
  uint64_t cols() const { return shape[0]; }
  uint64_t rows() const { return shape.size() > 1 ? shape[1] : 1; }
};

struct ModelOptions {
  // Stack Q|K|V and gate|up into one tensor each where they fit (engine/runtime/weight_fusion.h).
  bool fuse_weights = true;
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

  // The file's spec, with fused_qkv / fused_gate_up set where the load fused those weights.
  const model::ModelSpec& spec() const { return spec_; }
  vk::Context& context() const { return *ctx_; }
  // The weight, or nullptr when the model does not have it (e.g. biases).
  const DeviceTensor* find(model::Weight w, uint32_t layer = 0) const;
  // The weight; throws naming it when absent.
  const DeviceTensor& get(model::Weight w, uint32_t layer = 0) const;
  // The projection to logits (output.weight, or the embeddings when tied).
  const DeviceTensor& output() const;
  uint64_t weight_bytes() const { return weight_bytes_; }

 private:
  vk::Context* ctx_;
  model::ModelSpec spec_;
  std::vector<vk::Arena> arenas_;
  std::unordered_map<std::string, DeviceTensor> tensors_;
  // find()'s answers by (layer, weight), built once: the graph asks ~20 times per layer and step.
  std::vector<const DeviceTensor*> by_weight_;
  uint64_t weight_bytes_ = 0;
};

}  // namespace vkllm::runtime
