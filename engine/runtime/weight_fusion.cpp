#include "engine/runtime/weight_fusion.h"

#include <cstdint>
#include <span>
#include <unordered_map>

#include "engine/model/weight_names.h"

namespace vkllm::runtime {

namespace {

using model::Weight;

// The tensors of `parts` in layer `layer`, or empty when they cannot be stacked into one.
std::vector<const gguf::TensorInfo*> stackable(const gguf::GgufFile& file,
                                               std::span<const Weight> parts, uint32_t layer) {
  std::vector<const gguf::TensorInfo*> out;
  for (Weight w : parts) {
    const gguf::TensorInfo* t = file.find_tensor(model::weight_name(w, layer));
    if (!t || t->shape.size() != 2) return {};
    if (!out.empty() && (t->type != out[0]->type || t->shape[0] != out[0]->shape[0])) return {};
    out.push_back(t);
  }
  return out;
}

struct Group {
  std::vector<Weight> parts;
  Weight fused;
  bool* flag;
};

}  // namespace

TensorPlan plan_device_tensors(const gguf::GgufFile& file, const model::ModelSpec& spec, bool fuse,
                               uint64_t max_fused_bytes) {
  TensorPlan plan;
  const bool decoder = fuse && !spec.is_encoder() && spec.n_layer > 0;
  // The graph applies biases and Q/K norms to separate Q and K buffers.
  const bool qkv =
      decoder && !spec.fused_qkv && !spec.qkv_bias && !spec.qk_norm && !spec.kq_plain_norm;
  const bool gate_up = decoder && spec.gated_ffn && !spec.fused_gate_up;

  // Source tensor name -> the fused tensor it goes into (index into plan.tensors).
  std::unordered_map<std::string, size_t> fused_into;
  const Group groups[] = {
      {{Weight::AttnQ, Weight::AttnK, Weight::AttnV}, Weight::AttnQKV, &plan.fused_qkv},
      {{Weight::FfnGate, Weight::FfnUp}, Weight::FfnUp, &plan.fused_gate_up},
  };
  for (const Group& g : groups) {
    if (g.fused == Weight::AttnQKV ? !qkv : !gate_up) continue;
    std::vector<std::vector<const gguf::TensorInfo*>> layers;
    for (uint32_t l = 0; l < spec.n_layer; ++l) {
      auto parts = stackable(file, g.parts, l);
      // A bias on the up projection would apply to its half only.
      if (g.fused == Weight::FfnUp && file.find_tensor(model::weight_name(Weight::FfnUpBias, l)))
        parts.clear();
      if (parts.empty()) break;
      layers.push_back(std::move(parts));
    }
    if (layers.size() != spec.n_layer) continue;  // all layers or none, see the header
    *g.flag = true;
    for (uint32_t l = 0; l < spec.n_layer; ++l) {
      PlannedTensor t;
      t.name = model::weight_name(g.fused, l);
      t.type = layers[l][0]->type;
      t.shape = {layers[l][0]->shape[0], 0};
      for (const gguf::TensorInfo* s : layers[l]) {
        t.shape[1] += s->shape[1];
        t.byte_size += s->byte_size;
        t.sources.push_back(s);
        fused_into[s->name] = plan.tensors.size();
      }
      plan.tensors.push_back(std::move(t));
    }
  }
  // Gate|up experts, layer by layer (Llama 4 interleaves dense and MoE layers).
  const bool experts = decoder && spec.is_moe() && !spec.moe_up_only && !spec.moe_biases;
  for (uint32_t l = 0; experts && l < spec.n_layer; ++l) {
    if (!spec.is_moe_layer(l)) continue;
    const gguf::TensorInfo* gate = file.find_tensor(model::weight_name(Weight::FfnGateExps, l));
    const gguf::TensorInfo* up = file.find_tensor(model::weight_name(Weight::FfnUpExps, l));
    if (!gate || !up || gate->shape.size() != 3 || gate->shape != up->shape ||
        gate->type != up->type || gate->byte_size + up->byte_size > max_fused_bytes) {
      continue;
    }
    PlannedTensor t;
    t.name = model::weight_name(Weight::FfnGateUpExps, l);
    t.type = gate->type;
    t.shape = {gate->shape[0], 2 * gate->shape[1], gate->shape[2]};
    t.sources = {gate, up};
    t.byte_size = gate->byte_size + up->byte_size;
    t.per_expert = true;
    fused_into[gate->name] = fused_into[up->name] = plan.tensors.size();
    plan.tensors.push_back(std::move(t));
  }
  for (const auto& t : file.tensors()) {
    if (fused_into.contains(t.name)) continue;
    plan.tensors.push_back({t.name, t.type, t.shape, {&t}, t.byte_size});
  }
  return plan;
}

}  // namespace vkllm::runtime
