#include "engine/runtime/gemma4_forward.h"

#include <cmath>

namespace vkllm::runtime {

using model::Weight;

void Gemma4Forward::layers(StepBackend& b, uint32_t T, bool injected) const {
  inputs(b, T, injected);
  for (uint32_t l = 0; l < spec_.n_layer; ++l) layer(b, l, T);
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
  const uint32_t E = spec_.n_embd;
  b.begin_layer(l);
  attention(b, l, T);
  ffn(b, l, T);
  if (spec_.n_embd_altup > 0) per_layer_input(b, l, T);
  if (spec_.layer_out_scaled[l]) {
    // One value for the whole layer: every element a row of one.
    b.mul_weight({Act::X}, {Weight::LayerOutScale, l}, {Act::X}, 1, T * E);
    b.barrier();
  }
  b.end_layer(l);
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
  const WeightRef q_w[] = {{Weight::AttnQ, l}};
  b.rms_norm({Act::X}, {Weight::AttnNorm, l}, {Act::H}, E, T, q_w);
  b.barrier();
  const Rows q{Act::Q, 0, qd}, k{Act::K, 0, kvd}, v{Act::V, 0, kvd};
  const ProductOut qkv[] = {
      {{Weight::AttnQ, l}, q}, {{Weight::AttnK, l}, k}, {{Weight::AttnV, l}, v}};
  b.products({Act::H}, T, std::span(qkv, !own_kv ? 1 : v_is_k ? 2 : 3));
  b.barrier();
  if (v_is_k) {  // V is K's projection before K's norm and rotation
    b.copy(k, v, uint64_t(T) * kvd);
    b.barrier();
  }
  // Per-head norms: the packed rows as T x heads rows of hd.
  b.rms_norm({Act::Q}, {Weight::AttnQNorm, l}, {Act::Q}, hd, T * nh);
  if (own_kv) {
    b.rms_norm({Act::K}, {Weight::AttnKNorm, l}, {Act::K}, hd, T * nkv);
    b.rms_norm_plain({Act::V}, {Act::V}, hd, T * nkv);
  }
  b.barrier();
  RopeSpec rope;
  rope.head_dim = hd;
  rope.n_dims = spec_.rope_dims_of(l);
  rope.neox = true;
  rope.freq_base = swa ? spec_.rope_freq_base_swa : spec_.rope_freq_base;
  rope.freq_scale = swa ? spec_.rope_freq_scale_swa : spec_.rope_freq_scale;
  rope.freq_factors = !swa && spec_.has_rope_freqs;  // global layers only
  b.rope(rope, q, nh);
  if (own_kv) {
    b.write_kv(l, /*value=*/false, &rope, k);
    b.write_kv(l, /*value=*/true, nullptr, v);
  }
  b.barrier();
  b.mark("qkv_rope_kv_write");

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
  b.rms_norm_add({Act::H}, {Weight::PostAttnNorm, l}, {Act::X}, {Act::X}, E, T);
  b.barrier();
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
  const WeightRef gate_up_w[] = {gate_up[0].w};
  b.rms_norm({Act::X}, {Weight::FfnNorm, l}, {Act::H}, E, T, gate_up_w);
  b.barrier();
  const WeightRef down_w[] = {{Weight::FfnDown, l}};
  b.products_then_glu({Act::H}, T, std::span(gate_up, n_products),
                      {GluAct::GeluTanh, gate, up, {Act::FfnAct, 0, ff}, ff, down_w});
  b.barrier();
  const ProductOut down[] = {{down_w[0], {Act::H}}};
  b.products({Act::FfnAct, 0, ff}, T, down);
  b.barrier();
  if (moe) {
    b.rms_norm_add({Act::H}, {Weight::FfnPostNorm1, l}, {Act::AuxB, 0, E}, {Act::H}, E, T);
    b.barrier();
  }
  // The per-layer input's gate product reads X next: the sum's q8 copy is its input.
  const WeightRef next[] = {{Weight::PerLayerInpGate, l}};
  b.rms_norm_add(
      {Act::H}, {Weight::PostFfnNorm, l}, {Act::X}, {Act::X}, E, T,
      spec_.n_embd_altup > 0 ? std::span<const WeightRef>(next) : std::span<const WeightRef>());
  b.barrier();
  b.mark("ffn");
}

// X += post-norm(proj(gelu(gate(X)) * the layer's per-layer input)).
void Gemma4Forward::per_layer_input(StepBackend& b, uint32_t l, uint32_t T) const {
  const uint32_t E = spec_.n_embd, P = spec_.n_embd_altup;
  const ProductOut gate[] = {{{Weight::PerLayerInpGate, l}, {Act::Aux, 0, P}}};
  b.products({Act::X}, T, gate);
  b.barrier();
  // gelu(gate) * per-layer input is a GLU with the per-layer rows as its up half: one pass that
  // also writes the projection's q8 input.
  const ProductOut proj[] = {{{Weight::PerLayerProj, l}, {Act::AuxB, 0, E}}};
  b.glu(GluAct::GeluTanh, {Act::Aux, 0, P}, {Act::PerLayer, l * P, spec_.n_layer * P},
        {Act::Aux, 0, P}, P, T, std::span(&proj[0].w, 1));
  b.barrier();
  b.products({Act::Aux, 0, P}, T, proj);
  b.barrier();
  b.rms_norm_add({Act::AuxB, 0, E}, {Weight::PerLayerPostNorm, l}, {Act::X}, {Act::X}, E, T);
  b.barrier();
  b.mark("per_layer_input");
}

}  // namespace vkllm::runtime
