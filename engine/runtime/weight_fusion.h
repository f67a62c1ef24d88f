// Which GGUF tensors a Model holds on the device as one tensor. Per layer, Q|K|V become one
// attn_qkv and gate|up one ffn_up (gate rows first, the layout phi3 stores), so a decode layer
// records one product for each group instead of three and two. On an H100 this measured neutral
// in GPU time (the separate products already ran back to back, no barrier between them); what it
// saves is host recording, and it is the layout a fused gate|up epilogue would start from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"

namespace vkllm::runtime {

// One device tensor: the rows of its sources, stacked in order.
struct PlannedTensor {
  std::string name;
  gguf::TensorType type{};
  std::vector<uint64_t> shape;                   // ggml order; shape[1] sums the sources' rows
  std::vector<const gguf::TensorInfo*> sources;  // one unless fused
  uint64_t byte_size = 0;
  // 3-D sources stacked expert by expert (each expert's rows of every source in turn: gate|up
  // experts as ffn_gate_up_exps); else source after source.
  bool per_expert = false;
};

struct TensorPlan {
  std::vector<PlannedTensor> tensors;
  // Every layer's Q|K|V (gate|up) was fused: the graph reads attn_qkv (ffn_up with both halves).
  bool fused_qkv = false;
  bool fused_gate_up = false;
};

// With `fuse`, a group is fused in every layer or in none: only where all layers' Q, K and V (gate
// and up) share one type and width, with no biases or per-head norms applied to Q and K apart, and
// only for decoders. MoE layers' gate and up experts (gated, without biases, of one type) become
// one ffn_gate_up_exps per layer, where it is at most `max_fused_bytes` (one binding): the Vulkan
// backend then runs one product of 2 x n_ff_exp rows per expert and the GLU over its halves. A
// file's stacked ffn_gate_up_exps (read as two views) is so uploaded as it lies in the file.
// On an H200 one product measured even with two (4-layer
// Qwen3-30B-A3B and Gemma 4 26B-A4B Q4_K_M, b1-b32 within 0.3%, prefill +1.4-1.6%; the A/B key
// was removed after): it stays for the one dispatch fewer and the stacked files' own layout.
// Without `fuse`, every tensor of the file as it is (stacked experts as the two views).
TensorPlan plan_device_tensors(const gguf::GgufFile& file, const model::ModelSpec& spec, bool fuse,
                               uint64_t max_fused_bytes);

}  // namespace vkllm::runtime
