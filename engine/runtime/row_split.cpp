#include "engine/runtime/row_split.h"

#include <stdexcept>
#include <string>
#include <unordered_map>

#include "engine/model/weight_names.h"

namespace vkllm::runtime {

namespace {

using model::Weight;

// How a layer tensor is shared out: by rows (output features: a device's heads, its FFN share),
// by columns (input features: the summed products), or whole on every device.
enum class RowCut : uint8_t { Rows, Cols, Whole };

constexpr Weight kCutByRows[] = {Weight::AttnQ,     Weight::AttnK,    Weight::AttnV,
                                 Weight::FfnGate,   Weight::FfnUp,    Weight::AttnQBias,
                                 Weight::AttnKBias, Weight::AttnVBias};
constexpr Weight kCutByCols[] = {Weight::AttnOut, Weight::FfnDown};
constexpr Weight kKeptWhole[] = {Weight::AttnNorm, Weight::FfnNorm, Weight::AttnQNorm,
                                 Weight::AttnKNorm};

std::unordered_map<std::string, RowCut> row_split_cuts(uint32_t n_layer) {
  std::unordered_map<std::string, RowCut> cuts;
  for (uint32_t l = 0; l < n_layer; ++l) {
    for (Weight w : kCutByRows) cuts[model::weight_name(w, l)] = RowCut::Rows;
    for (Weight w : kCutByCols) cuts[model::weight_name(w, l)] = RowCut::Cols;
    for (Weight w : kKeptWhole) cuts[model::weight_name(w, l)] = RowCut::Whole;
  }
  return cuts;
}

std::runtime_error row_split_refusal(const std::string& why) {
  return std::runtime_error("the row split cannot run this model: " + why);
}

// Part i of n of a tensor's rows (a 1-D tensor's elements): one contiguous run of its bytes.
gguf::TensorInfo row_slice_view(const gguf::TensorInfo& t, uint32_t i, uint32_t n) {
  gguf::TensorInfo v = t;
  uint64_t& rows = t.shape.size() > 1 ? v.shape[1] : v.shape[0];
  if (rows % n != 0)
    throw row_split_refusal(t.name + " has rows that do not divide by the devices");
  rows /= n;
  v.byte_size = t.byte_size / n;
  v.offset = t.offset + i * v.byte_size;
  return v;
}

// Part i of n of a matrix's columns: a strided view with one run per row (the upload reads each
// "expert" of a strided view as a run; this view's experts are the rows, shape [cols / n, 1,
// rows]). The planned tensor keeps the 2-D shape.
gguf::TensorInfo col_slice_view(const gguf::TensorInfo& t, uint32_t i, uint32_t n) {
  const uint64_t rows = t.shape[1], row_bytes = t.byte_size / rows;
  const uint64_t part = row_bytes / n;
  gguf::TensorInfo v = t;
  v.shape = {t.shape[0] / n, 1, rows};
  v.byte_size = part * rows;
  v.expert_stride = row_bytes;
  v.expert_skip = i * part;
  return v;
}

}  // namespace

void check_row_split(const model::ModelSpec& s, const gguf::GgufFile& file, uint32_t n) {
  using model::Arch;
  if (s.arch != Arch::Llama && s.arch != Arch::Qwen2 && s.arch != Arch::Qwen3) {
    throw row_split_refusal("it runs llama, qwen2 and qwen3 decoders, not " + s.arch_name +
                            " (split it by layers)");
  }
  if (s.is_moe() || s.has_recurrent_state() || s.post_norms || s.attn_out_bias || s.fused_qkv ||
      s.fused_gate_up || s.uses_mrope() || s.n_deepstack || !s.layer_nope.empty() ||
      !s.layer_head_dim.empty() || !s.layer_n_head_kv.empty() || !s.layer_n_ff.empty()) {
    throw row_split_refusal("this " + s.arch_name +
                            " file has layers of a kind it does not split (split it by layers)");
  }
  if (n < 2) throw row_split_refusal("it needs two devices at least");
  const auto divides = [&](uint32_t v, const char* what) {
    if (v % n != 0) {
      throw row_split_refusal(std::string(what) + " (" + std::to_string(v) + ") do not divide by " +
                              std::to_string(n) + " devices");
    }
  };
  divides(s.n_head, "its attention heads");
  divides(s.n_head_kv, "its KV heads");
  divides(s.n_ff, "its FFN rows");
  const auto cuts = row_split_cuts(s.n_layer);
  for (const auto& t : file.tensors()) {
    if (!t.name.starts_with("blk.")) continue;
    const auto it = cuts.find(t.name);
    if (it == cuts.end()) throw row_split_refusal("it has no rule to split " + t.name);
    if (it->second != RowCut::Cols) continue;
    const uint64_t block = gguf::traits(t.type).block_elements;
    if (t.shape.size() != 2 || t.shape[0] % n != 0 || (t.shape[0] / n) % block != 0) {
      throw row_split_refusal(t.name + " (" + std::string(gguf::type_name(t.type)) + ", " +
                              std::to_string(t.shape[0]) + " columns) does not cut into " +
                              std::to_string(n) + " parts of whole " + std::to_string(block) +
                              "-column blocks");
    }
  }
}

model::ModelSpec row_shard_spec(model::ModelSpec spec, uint32_t n) {
  spec.n_head /= n;
  spec.n_head_kv /= n;
  spec.n_ff /= n;
  return spec;
}

std::deque<gguf::TensorInfo> shard_tensor_plan(TensorPlan& plan, const model::ModelSpec& spec,
                                               RowShard shard) {
  std::deque<gguf::TensorInfo> views;
  const auto cuts = row_split_cuts(spec.n_layer);
  for (PlannedTensor& t : plan.tensors) {
    if (!t.name.starts_with("blk.")) continue;
    uint64_t rows = 0, bytes = 0;
    for (const gguf::TensorInfo*& src : t.sources) {
      const auto it = cuts.find(src->name);
      if (it == cuts.end()) throw row_split_refusal("it has no rule to split " + src->name);
      if (it->second == RowCut::Rows) {
        src = &views.emplace_back(row_slice_view(*src, shard.index, shard.count));
      } else if (it->second == RowCut::Cols) {
        src = &views.emplace_back(col_slice_view(*src, shard.index, shard.count));
      }
      rows += src->shape.size() > 2 ? src->shape[2] : src->shape.size() > 1 ? src->shape[1] : 1;
      bytes += src->byte_size;
    }
    t.shape[0] = t.sources[0]->shape[0];
    if (t.shape.size() > 1) t.shape[1] = rows;
    t.byte_size = bytes;
  }
  return views;
}

}  // namespace vkllm::runtime
