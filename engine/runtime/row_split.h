// The row split (tensor parallelism, Megatron's way) of a decoder across devices: each of N
// devices holds 1/N of every layer's attention heads (the Q, K and V rows of its heads, their KV
// cache, the matching columns of the output projection) and 1/N of its FFN (gate and up rows,
// down columns), and runs the unchanged decoder graph on that share (row_shard_spec: n_head,
// n_head_kv and n_ff divided by N). Its output projection and FFN down product then give partial
// sums of the residual stream, which the backend adds up across the devices
// (engine/runtime/row_split_backend.h). Norms and the token embeddings are on every device, the
// output norm and LM head on the first.
//
// Which models: llama, qwen2 and qwen3 decoders (dense, without fused files' attn_qkv or
// ffn_up|gate, without biases after the products that are summed) whose heads, KV heads and FFN
// width divide by N, and whose output and down projections' columns cut into whole quantized
// blocks (Q4_K: 256 columns a block). check_row_split says which condition a model misses.
#pragma once

#include <cstdint>
#include <deque>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"
#include "engine/runtime/model.h"
#include "engine/runtime/weight_fusion.h"

namespace vkllm::runtime {

// Throws std::runtime_error naming what keeps `spec` (read from `file`) from a row split over
// `count` devices (an architecture, a weight, a size that does not divide).
void check_row_split(const model::ModelSpec& spec, const gguf::GgufFile& file, uint32_t count);

// The spec of one device's share: n_head, n_head_kv and n_ff divided by `count`.
model::ModelSpec row_shard_spec(model::ModelSpec spec, uint32_t count);

// Points `plan`'s tensors (planned for the whole model `spec` of the file) at shard `shard`'s part
// of the file's bytes: rows of Q, K, V (and their biases), gate and up; columns of the output and
// down projections (views with one run of bytes per row); the other tensors whole. Fused Q|K|V and
// gate|up stack the shard's parts. Returns the views the plan's sources now point into: keep them
// while the plan is read. Throws std::runtime_error for a layer tensor it has no rule for.
std::deque<gguf::TensorInfo> shard_tensor_plan(TensorPlan& plan, const model::ModelSpec& spec,
                                               RowShard shard);

}  // namespace vkllm::runtime
