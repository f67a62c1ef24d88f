#include "engine/model/moe_spec.h"

#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/model/weight_names.h"

namespace vkllm::model::detail {

namespace {

// The shared expert, where layer 0 has ffn_up_shexp: its width from
// expert_shared_feed_forward_length or else the tensor (llama.cpp's fallbacks differ per
// architecture; the file's tensors are what it then checks), the gate where
// ffn_gate_inp_shexp exists; every layer must have the same.
void read_shared_expert(const gguf::GgufFile& f, const Keys& k, ModelSpec& s) {
  // The first MoE layer's (Llama 4's interleaved models may start with a dense one).
  uint32_t first = 0;
  while (first < s.n_layer && !s.is_moe_layer(first)) ++first;
  const auto* up0 = f.find_tensor(weight_name(Weight::FfnUpShexp, first));
  if (!up0) return;
  if (up0->shape.size() != 2) throw std::runtime_error("ffn_up_shexp is not a matrix");
  s.n_ff_shexp = k.u32("expert_shared_feed_forward_length", static_cast<uint32_t>(up0->shape[1]));
  s.moe_shexp_gated = f.find_tensor(weight_name(Weight::FfnGateInpShexp, first)) != nullptr;
  const uint64_t E = s.n_embd, F = s.n_ff_shexp;
  for (uint32_t l = first; l < s.n_layer; ++l) {
    if (!s.is_moe_layer(l)) continue;
    const std::tuple<Weight, std::vector<uint64_t>> needed[] = {{Weight::FfnUpShexp, {E, F}},
                                                                {Weight::FfnDownShexp, {F, E}},
                                                                {Weight::FfnGateShexp, {E, F}}};
    // An up-only model's shared expert has no gate either (Nemotron-H MoE).
    for (const auto& [w, shape] : std::span(needed).first(s.moe_up_only ? 2 : 3)) {
      const auto* t = f.find_tensor(weight_name(w, l));
      if (!t || t->shape != shape) {
        throw std::runtime_error("model has no shared-expert tensor " + weight_name(w, l) +
                                 " of the shape its metadata gives");
      }
    }
    const auto* g = f.find_tensor(weight_name(Weight::FfnGateInpShexp, l));
    if (s.moe_shexp_gated &&
        (!g || g->shape.empty() || g->shape[0] != E || (g->shape.size() > 1 && g->shape[1] != 1))) {
      throw std::runtime_error("model has no [" + std::to_string(E) + "] tensor " +
                               weight_name(Weight::FfnGateInpShexp, l));
    }
  }
}

}  // namespace

// qwen3moe, as llama.cpp reads it: expert_count and expert_used_count are required,
// expert_feed_forward_length defaults to n_ff / n_expert_used, the router is a softmax and the
// selected weights are always renormalised (its graph passes norm_w = true); no dense FFN (but
// in the layers a model says are dense: Llama 4's ModelSpec::layer_is_moe).
void read_moe(const gguf::GgufFile& f, const Keys& k, ModelSpec& s) {
  s.n_expert = k.u32("expert_count", 0);
  s.n_expert_used = k.u32("expert_used_count", 0);
  if (s.n_expert == 0 || s.n_expert_used == 0 || s.n_expert_used > s.n_expert) {
    throw std::runtime_error(s.arch_name + " model metadata needs expert_count > 0 and 0 < " +
                             "expert_used_count <= expert_count (got " +
                             std::to_string(s.n_expert) + " and " +
                             std::to_string(s.n_expert_used) + ")");
  }
  // Granite's experts are feed_forward_length wide (llama.cpp's granitehybrid reads n_ff).
  s.n_ff_exp = k.u32("expert_feed_forward_length",
                     s.arch == Arch::GraniteHybrid ? s.n_ff : s.n_ff / s.n_expert_used);
  // llama.cpp's graphs: qwen2moe and llama4 keep the selected experts' probabilities as they are;
  // Nemotron-H MoE renormalises as expert_weights_norm says.
  s.moe_norm_weights = s.arch != Arch::GptOss && s.arch != Arch::Qwen2Moe && s.arch != Arch::Llama4;
  if (s.is_nemotron_h()) s.moe_norm_weights = k.flag("expert_weights_norm", false);
  s.fused_gate_up = false;
  read_shared_expert(f, k, s);
  const Weight stacked[] = {Weight::FfnGateExps, Weight::FfnUpExps, Weight::FfnDownExps};
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    if (!s.is_moe_layer(l)) {
      // Nemotron-H's other layers are mixers and attention, without an FFN.
      if (!s.is_nemotron_h() && !f.find_tensor(weight_name(Weight::FfnGate, l)))
        throw std::runtime_error("model has no dense FFN tensor " +
                                 weight_name(Weight::FfnGate, l));
      continue;
    }
    const auto* router = f.find_tensor(weight_name(Weight::FfnGateInp, l));
    if (!router || router->shape.size() != 2 || router->shape[0] != s.n_embd ||
        router->shape[1] != s.n_expert) {
      throw std::runtime_error("model has no [" + std::to_string(s.n_embd) + ", " +
                               std::to_string(s.n_expert) + "] tensor " +
                               weight_name(Weight::FfnGateInp, l));
    }
    for (Weight w : std::span(stacked).subspan(s.moe_up_only ? 1 : 0)) {
      const bool down = w == Weight::FfnDownExps;
      const auto* t = f.find_tensor(weight_name(w, l));
      const uint64_t E = s.moe_expert_embd();
      if (!t || t->shape.size() != 3 || t->shape[0] != (down ? s.n_ff_exp : E) ||
          t->shape[1] != (down ? E : s.n_ff_exp) || t->shape[2] != s.n_expert) {
        throw std::runtime_error("model has no expert tensor " + weight_name(w, l) +
                                 " of the shape its metadata gives");
      }
    }
    const auto* sel = f.find_tensor(weight_name(Weight::FfnExpProbsBias, l));
    if (s.moe_select_bias && (!sel || sel->type != gguf::TensorType::F32 ||
                              sel->shape != std::vector<uint64_t>{s.n_expert})) {
      throw std::runtime_error("model has no F32 [" + std::to_string(s.n_expert) +
                               "] selection bias " + weight_name(Weight::FfnExpProbsBias, l));
    }
    if (!s.moe_biases) continue;
    const std::pair<Weight, uint64_t> biases[] = {{Weight::FfnGateInpBias, s.n_expert},
                                                  {Weight::FfnGateExpsBias, s.n_ff_exp},
                                                  {Weight::FfnUpExpsBias, s.n_ff_exp},
                                                  {Weight::FfnDownExpsBias, s.n_embd}};
    for (const auto& [w, rows] : biases) {
      const auto* t = f.find_tensor(weight_name(w, l));
      const bool router = w == Weight::FfnGateInpBias;
      if (!t || t->type != gguf::TensorType::F32 || t->shape.size() != (router ? 1u : 2u) ||
          t->shape[0] != rows || (!router && t->shape[1] != s.n_expert)) {
        throw std::runtime_error("model has no F32 bias tensor " + weight_name(w, l) +
                                 " of the shape its metadata gives");
      }
    }
  }
}

// gpt-oss (llama.cpp's openai-moe): even layers use the sliding window (pattern 2), Q/K/V and
// output biases, attention sinks, post_attention_norm before the MoE FFN, whose router has a
// bias, picks the top k logits and softmaxes over them, and whose experts have biases and run
// the clamped SwiGLU. YaRN RoPE applies to every layer (both kinds share one base).
void read_gpt_oss(const gguf::GgufFile& f, const Keys& k, ModelSpec& s) {
  s.rope_ordering = RopeOrdering::NeoX;
  s.activation = Activation::SwigluOai;
  s.moe_gating = MoeGating::SoftmaxTopK;
  s.moe_biases = true;
  s.attn_out_bias = true;
  s.attn_sinks = true;
  s.ffn_norm_is_post_attn = true;
  s.sliding_window = k.u32("attention.sliding_window");
  for (uint32_t l = 0; l < s.n_layer; ++l) s.layer_is_swa[l] = l % 2 == 0;
  s.rope_freq_base_swa = k.f32("rope.freq_base_swa", s.rope_freq_base);
  read_moe(f, k, s);
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    const std::pair<Weight, uint64_t> needed[] = {
        {Weight::AttnSinks, s.n_head},         {Weight::AttnOutBias, s.n_embd},
        {Weight::AttnQBias, s.n_embd_q()},     {Weight::AttnKBias, s.n_embd_k_gqa()},
        {Weight::AttnVBias, s.n_embd_v_gqa()}, {Weight::PostAttnNorm, s.n_embd}};
    for (const auto& [w, n] : needed) {
      const auto* t = f.find_tensor(weight_name(w, l));
      if (!t || t->type != gguf::TensorType::F32 || t->shape.size() != 1 || t->shape[0] != n) {
        throw std::runtime_error("gpt-oss model has no F32 tensor " + weight_name(w, l) + " of " +
                                 std::to_string(n) + " values");
      }
    }
  }
}

}  // namespace vkllm::model::detail
