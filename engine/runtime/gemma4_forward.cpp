#include "engine/runtime/gemma4_forward.h"

#include <cmath>

namespace vkllm::runtime {

using model::Weight;

void Gemma4Forward::layers(StepBackend& b, uint32_t T, bool injected) const {
  inputs(b, T, injected);
  if (spec_.n_layer == 0) return;
  const WeightRef q_w[] = {{Weight::AttnQ, 0}};
  b.rms_norm({Act::X}, {Weight::AttnNorm, 0}, {Act::H}, spec_.n_embd, T, q_w);
  b.barrier();
  for (uint32_t l = 0; l < spec_.n_layer; ++l) layer(b, l, T);
}

WeightRef Gemma4Forward::gate_up_input(uint32_t l) const {
  return {spec_.fused_gate_up ? Weight::FfnUp : Weight::FfnGate, l};
}

// X = the scaled embeddings; PerLayer = the per-layer inputs (llama.cpp's
// project_per_layer_inputs: token rows plus the normed projection of X, over sqrt(2)).
void Gemma4Forward::inputs(StepBackend& b, uint32_t T, bool injected) const {
  const uint32_t E = spec_.n_embd, P = spec_.n_embd_altup, PL = spec_.n_layer * P;
  b.embed({Weight::TokenEmbd}, {Act::X}, T, spec_.embed_scale);
  if (injected) {
    b.barrier();
    b.inject_rows({Act::X}, E);
  }
  if (P == 0) {
    b.barrier();
    return;
  }
  b.embed({Weight::PerLayerTokenEmbd}, {Act::PerLayer}, T, std::sqrt(static_cast<float>(P)));
  b.barrier();
  const ProductOut proj[] = {{{Weight::PerLayerModelProj}, {Act::Aux, 0, PL}}};
  b.products({Act::X}, T, proj);
  b.barrier();
  b.scale_rows({Act::Aux, 0, PL}, PL, T, 1.0f / std::sqrt(static_cast<float>(E)));
  b.barrier();
  b.rms_norm({Act::Aux}, {Weight::PerLayerProjNorm}, {Act::Aux}, P, T * spec_.n_layer);
  b.barrier();
  b.add_rows({Act::PerLayer, 0, PL}, {Act::Aux, 0, PL}, {Act::PerLayer, 0, PL}, PL, T,
             1.0f / std::sqrt(2.0f));
  b.barrier();
}

void Gemma4Forward::layer(StepBackend& b, uint32_t l, uint32_t T) const {
  b.begin_layer(l);
  attention(b, l, T);
  ffn(b, l, T);
  if (spec_.n_embd_altup > 0) per_layer_input(b, l, T);
  b.end_layer(l);
}

void Gemma4Forward::close_layer(StepBackend& b, uint32_t l, uint32_t T, Rows x, WeightRef w) const {
  const uint32_t E = spec_.n_embd;
  const WeightRef scale{Weight::LayerOutScale, l};
  const WeightRef* scaled = spec_.layer_out_scaled[l] ? &scale : nullptr;
  if (l + 1 < spec_.n_layer) {
    const WeightRef q_w[] = {{Weight::AttnQ, l + 1}};
    b.rms_norm_add_norm(x, w, {Act::X}, scaled,
                        {{Act::X}, {Weight::AttnNorm, l + 1}, {Act::H}, E, q_w}, T);
    b.barrier();
    b.mark("close_layer");
    return;
  }
  b.rms_norm_add(x, w, {Act::X}, {Act::X}, E, T);
  b.barrier();
  if (scaled) {
    // One value for the whole layer: every element a row of one.
    b.mul_weight({Act::X}, scale, {Act::X}, 1, T * E);
    b.barrier();
  }
}

// X += post-norm(attention(norm(X))). Layers past n_layer_kv project queries only and read the
// cache of the layer they share (the backend maps it).
void Gemma4Forward::attention(StepBackend& b, uint32_t l, uint32_t T) const {
  const uint32_t E = spec_.n_embd, nh = spec_.n_head;
  const uint32_t hd = spec_.head_dim_of(l), nkv = spec_.n_head_kv_of(l);
  const uint32_t qd = hd * nh, kvd = hd * nkv;
  const bool swa = spec_.layer_is_swa[l];
  const bool own_kv = spec_.owns_kv(l);
  const bool v_is_k = own_kv && spec_.layer_v_is_k[l];
  // H holds the layer's input norm (written by the layer before, or by layers()).
  const Rows q{Act::Q, 0, qd}, k{Act::K, 0, kvd}, v{Act::V, 0, kvd};
  const ProductOut qkv[] = {
      {{Weight::AttnQ, l}, q}, {{Weight::AttnK, l}, k}, {{Weight::AttnV, l}, v}};
  b.products({Act::H}, T, std::span(qkv, !own_kv ? 1 : v_is_k ? 2 : 3));
  b.barrier();
  b.mark("qkv");
  if (v_is_k) {  // V is K's projection before K's norm and rotation
    b.copy(k, v, uint64_t(T) * kvd);
    b.barrier();
  }
  // Per-head norms (V's without a weight) inside the rotation and the cache writes.
  RopeSpec rope;
  rope.head_dim = hd;
  rope.n_dims = spec_.rope_dims_of(l);
  rope.neox = true;
  rope.freq_base = swa ? spec_.rope_freq_base_swa : spec_.rope_freq_base;
  rope.freq_scale = swa ? spec_.rope_freq_scale_swa : spec_.rope_freq_scale;
  rope.freq_factors = !swa && spec_.has_rope_freqs;  // global layers only
  auto n = StepBackend::NormRopeKv::of_layer(l, T, hd, nh, nkv, q, k, v);
  n.kv = own_kv;
  n.v_norm = true;
  n.rope_q = rope;
  n.rope_k = &rope;
  b.norm_rope_kv(n);
  b.barrier();
  b.mark("rope_kv_write");

  AttentionSpec at;
  at.layer = l;
  at.q = q;
  at.out = {Act::Attn, 0, qd};
  at.n_q_heads = nh;
  at.head_dim = hd;
  at.scale = spec_.attn_scale;
  at.window = swa ? spec_.sliding_window : 0;
  at.open_span = swa;  // an image's two-way attention in the local layers only, as llama.cpp
  const ProductOut out[] = {{{Weight::AttnOut, l}, {Act::H}}};
  at.feeds = std::span(&out[0].w, 1);
  b.attention(at);
  b.barrier();
  b.mark("attention");
  b.products({Act::Attn, 0, qd}, T, out);
  b.barrier();
  b.mark("attn_out");
  if (spec_.is_moe()) {
    b.rms_norm_add({Act::H}, {Weight::PostAttnNorm, l}, {Act::X}, {Act::X}, E, T);
  } else {  // with the FFN's input norm (ffn() leaves it)
    const WeightRef gate_up_w[] = {gate_up_input(l)};
    b.rms_norm_add_norm({Act::H}, {Weight::PostAttnNorm, l}, {Act::X}, nullptr,
                        {{Act::X}, {Weight::FfnNorm, l}, {Act::H}, E, gate_up_w}, T);
  }
  b.barrier();
  b.mark("post_attn_norm");
}

// X += post-norm(FFN(norm(X))), the layer's own FFN width. An MoE layer's FFN is the dense one
// (post-normed by post_ffw_norm_1) plus the experts' (their input pre_ffw_norm_2(X), post-normed
// by post_ffw_norm_2), whose router reads rms_norm(X) / sqrt(n_embd) * ffn_gate_inp.scale.
void Gemma4Forward::ffn(StepBackend& b, uint32_t l, uint32_t T) const {
  const uint32_t E = spec_.n_embd, ff = spec_.n_ff_of(l);
  const bool moe = spec_.is_moe();
  if (moe) {
    b.rms_norm({Act::X}, {Weight::FfnPreNorm2, l}, {Act::Aux, 0, E}, E, T);
    b.rms_norm_plain({Act::X}, {Act::AuxB, 0, E}, E, T);
    b.barrier();
    b.scale_rows({Act::AuxB, 0, E}, E, T, 1.0f / std::sqrt(static_cast<float>(E)));
    b.barrier();
    b.mul_weight({Act::AuxB, 0, E}, {Weight::FfnGateInpScale, l}, {Act::AuxB, 0, E}, E, T);
    b.barrier();
    MoeSpec m;
    m.layer = l;
    m.x = {Act::Aux, 0, E};
    m.router_own_input = true;
    m.router_x = {Act::AuxB, 0, E};
    m.out = {Act::AuxB, 0, E};  // the router's input is read first
    m.accumulate = false;
    m.n_embd = E;
    m.n_ff = spec_.n_ff_exp;
    m.n_expert = spec_.n_expert;
    m.n_used = spec_.n_expert_used;
    m.norm_weights = spec_.moe_norm_weights;
    m.act = GluAct::GeluTanh;
    m.down_scales = spec_.moe_down_scales;
    b.moe_ffn(m, T);
    b.barrier();
    b.rms_norm({Act::AuxB, 0, E}, {Weight::FfnPostNorm2, l}, {Act::AuxB, 0, E}, E, T);
    b.barrier();
    b.mark("moe");
  }
  Rows gate{Act::Gate, 0, ff}, up{Act::Up, 0, ff};
  ProductOut gate_up[] = {{{Weight::FfnGate, l}, gate}, {{Weight::FfnUp, l}, up}};
  size_t n_products = 2;
  if (spec_.fused_gate_up) {  // gate and up stacked in FfnUp (the Vulkan backend's weight fusion)
    gate_up[0] = {{Weight::FfnUp, l}, {Act::Up, 0, 2 * ff}};
    n_products = 1;
    gate = {Act::Up, 0, 2 * ff};
    up = {Act::Up, ff, 2 * ff};
  }
  if (moe) {  // else the post-attention norm wrote it
    const WeightRef gate_up_w[] = {gate_up[0].w};
    b.rms_norm({Act::X}, {Weight::FfnNorm, l}, {Act::H}, E, T, gate_up_w);
    b.barrier();
    b.mark("ffn_norm");
  }
  const WeightRef down_w[] = {{Weight::FfnDown, l}};
  b.products_then_glu({Act::H}, T, std::span(gate_up, n_products),
                      {GluAct::GeluTanh, gate, up, {Act::FfnAct, 0, ff}, ff, down_w});
  b.barrier();
  b.mark("gate_up_glu");
  const ProductOut down[] = {{down_w[0], {Act::H}}};
  b.products({Act::FfnAct, 0, ff}, T, down);
  b.barrier();
  b.mark("down");
  if (moe) {
    b.rms_norm_add({Act::H}, {Weight::FfnPostNorm1, l}, {Act::AuxB, 0, E}, {Act::H}, E, T);
    b.barrier();
  }
  if (spec_.n_embd_altup == 0) {
    close_layer(b, l, T, {Act::H}, {Weight::PostFfnNorm, l});
    return;
  }
  // The per-layer input's gate product reads X next: the sum's q8 copy is its input.
  const WeightRef next[] = {{Weight::PerLayerInpGate, l}};
  b.rms_norm_add({Act::H}, {Weight::PostFfnNorm, l}, {Act::X}, {Act::X}, E, T, next);
  b.barrier();
  b.mark("post_ffn_norm");
}

// X += post-norm(proj(gelu(gate(X)) * the layer's per-layer input)).
void Gemma4Forward::per_layer_input(StepBackend& b, uint32_t l, uint32_t T) const {
  const uint32_t E = spec_.n_embd, P = spec_.n_embd_altup;
  const ProductOut gate[] = {{{Weight::PerLayerInpGate, l}, {Act::Aux, 0, P}}};
  b.products({Act::X}, T, gate);
  b.barrier();
  b.mark("pli_gate");
  // gelu(gate) * per-layer input is a GLU with the per-layer rows as its up half: one pass that
  // also writes the projection's q8 input.
  const ProductOut proj[] = {{{Weight::PerLayerProj, l}, {Act::AuxB, 0, E}}};
  b.glu(GluAct::GeluTanh, {Act::Aux, 0, P}, {Act::PerLayer, l * P, spec_.n_layer * P},
        {Act::Aux, 0, P}, P, T, std::span(&proj[0].w, 1));
  b.barrier();
  b.mark("pli_glu");
  b.products({Act::Aux, 0, P}, T, proj);
  b.barrier();
  b.mark("pli_proj");
  close_layer(b, l, T, {Act::AuxB, 0, E}, {Weight::PerLayerPostNorm, l});
}

}  // namespace vkllm::runtime
