#include "engine/runtime/gemma3n_forward.h"

#include <cmath>

#include "engine/runtime/qkv_projection.h"

namespace vkllm::runtime {

using model::Weight;

namespace {
const float kInvSqrt2 = 1.0f / std::sqrt(2.0f);
}  // namespace

Rows Gemma3nForward::stream(Act a, uint32_t i) const {
  const uint32_t E = spec_.n_embd;
  return {a, i * E, spec_.n_altup * E};
}

void Gemma3nForward::layers(StepBackend& b, uint32_t T) const {
  inputs(b, T);
  for (uint32_t l = 0; l < spec_.n_layer; ++l) layer(b, l, T);
  merge_streams(b, T);
}

// The embedding (the active stream), the per-layer inputs, and the other streams projected
// from the embedding at its magnitude.
void Gemma3nForward::inputs(StepBackend& b, uint32_t T) const {
  const uint32_t E = spec_.n_embd, A = spec_.n_altup, P = spec_.n_embd_altup;
  const uint32_t PL = spec_.n_layer * P;
  const Rows x0 = stream(Act::Alt, 0);
  b.embed({Weight::TokenEmbd}, x0, T, spec_.embed_scale);
  b.embed({Weight::PerLayerTokenEmbd}, {Act::PerLayer}, T, std::sqrt(static_cast<float>(P)));
  b.barrier();
  const ProductOut proj[] = {{{Weight::PerLayerModelProj}, {Act::Aux, 0, PL}}};
  b.products(x0, T, proj);
  b.barrier();
  b.scale_rows({Act::Aux, 0, PL}, PL, T, 1.0f / std::sqrt(static_cast<float>(E)));
  b.barrier();
  b.rms_norm({Act::Aux}, {Weight::PerLayerProjNorm}, {Act::Aux}, P, T * spec_.n_layer);
  b.barrier();
  b.add_rows({Act::PerLayer, 0, PL}, {Act::Aux, 0, PL}, {Act::PerLayer, 0, PL}, PL, T, kInvSqrt2);
  b.barrier();

  ProductOut alt[3];
  const uint32_t wide = (A - 1) * E;
  for (uint32_t i = 1; i < A; ++i)
    alt[i - 1] = {{Weight::AltupProj, 0, i - 1}, {Act::Aux, (i - 1) * E, wide}};
  b.products(x0, T, std::span<const ProductOut>(alt, A - 1));
  b.barrier();
  for (uint32_t i = 1; i < A; ++i)
    b.match_magnitude(x0, {Act::Aux, (i - 1) * E, wide}, stream(Act::Alt, i), E, T);
  b.barrier();
}

void Gemma3nForward::router(StepBackend& b, uint32_t l, Rows x, uint32_t T, bool normed) const {
  const uint32_t E = spec_.n_embd, A = spec_.n_altup;
  // tanh(router(norm(x) / E)), with the 1/E after the (linear) product: the norm then writes
  // the product's q8 input itself, and the scale pass and its barrier go.
  const ProductOut out[] = {{{Weight::AltupRouter, l}, {Act::Modal, 0, A}}};
  if (!normed) {
    b.rms_norm(x, {Weight::AltupRouterNorm, l}, {Act::AuxB, 0, E}, E, T, std::span(&out[0].w, 1));
    b.barrier();
  }
  b.products({Act::AuxB, 0, E}, T, out);
  b.barrier();
  b.tanh({Act::Modal}, {Act::Modal}, uint64_t(T) * A, 1.0f / static_cast<float>(E));
  b.barrier();
}

void Gemma3nForward::layer(StepBackend& b, uint32_t l, uint32_t T) const {
  const uint32_t E = spec_.n_embd, A = spec_.n_altup, act = spec_.altup_active;
  b.begin_layer(l);
  // AltUp predict: every stream as a router-weighted mix of all.
  router(b, l, stream(Act::Alt, act), T);
  const ProductOut predict[] = {{{Weight::AltupPredictCoef, l}, {Act::Coef, 0, A * A}}};
  b.products({Act::Modal, 0, A}, T, predict);
  b.barrier();
  b.altup_predict({Act::Alt}, {Act::Coef, 0, A * A}, {Act::AltPred}, E, A, T);
  b.barrier();
  b.mark("altup_predict");

  // The active prediction's norm feeds LAuReL and attention; X = LAuReL's output.
  const Rows active = stream(Act::AltPred, act);
  // Its q8 copy (where the products take one) serves LAuReL's left product and Q/K/V alike.
  const WeightRef norm_feeds[] = {{Weight::LaurelL, l}, {Weight::AttnQ, l}};
  b.rms_norm(active, {Weight::AttnNorm, l}, {Act::H}, E, T, norm_feeds);
  b.barrier();
  const uint32_t rank = spec_.laurel_rank;
  const ProductOut left[] = {{{Weight::LaurelL, l}, {Act::AuxB, 0, rank}}};
  b.products({Act::H}, T, left);
  b.barrier();
  const ProductOut right[] = {{{Weight::LaurelR, l}, {Act::X}}};
  b.products({Act::AuxB, 0, rank}, T, right);
  b.barrier();
  b.rms_norm_add({Act::X}, {Weight::LaurelPostNorm, l}, {Act::H}, {Act::X}, E, T);
  b.mark("laurel");

  attention(b, l, T);
  // X = (post-norm(attention) + active prediction + LAuReL) / sqrt(2).
  b.rms_norm_add({Act::H}, {Weight::PostAttnNorm, l}, active, {Act::H}, E, T);
  b.barrier();
  b.add_rows({Act::H}, {Act::X}, {Act::X}, E, T, kInvSqrt2);
  b.barrier();
  ffn(b, l, T);

  // AltUp correct: the layer's change to the active stream, router-weighted, into every stream.
  router(b, l, {Act::X}, T, /*normed=*/true);  // ffn() wrote its norm
  const ProductOut correct[] = {{{Weight::AltupCorrectCoef, l}, {Act::Coef, 0, A}}};
  b.products({Act::Modal, 0, A}, T, correct);
  b.barrier();
  b.altup_correct({Act::AltPred}, {Act::X}, {Act::Coef, 0, A}, {Act::Alt}, E, A, act, T);
  b.barrier();
  b.mark("altup_correct");
  per_layer_input(b, l, T);
  b.end_layer(l);
}

// H = the attention's output projection (the caller adds its post-norm). Layers past n_layer_kv
// project queries only and read the cache of the layer they share (the backend maps it).
void Gemma3nForward::attention(StepBackend& b, uint32_t l, uint32_t T) const {
  const uint32_t hd = spec_.head_dim, nh = spec_.n_head, nkv = spec_.n_head_kv;
  const bool swa = spec_.layer_is_swa[l];
  const bool own_kv = spec_.owns_kv(l);
  const QkvProducts qkv = qkv_products(spec_, l);
  const auto [q, k, v] = qkv.rows;
  b.products({Act::H}, T, own_kv ? qkv.span() : std::span(qkv.outs, 1));
  b.barrier();
  // Per-head norms over the packed Q, K and V rows (read_gemma3n refuses a fused Q|K|V), inside
  // the rotation and the cache writes.
  RopeSpec rope;
  rope.head_dim = hd;
  rope.n_dims = spec_.rope_dims;
  rope.neox = true;
  rope.freq_base = swa ? spec_.rope_freq_base_swa : spec_.rope_freq_base;
  rope.freq_scale = swa ? spec_.rope_freq_scale_swa : spec_.rope_freq_scale;
  auto n = StepBackend::NormRopeKv::of_layer(l, T, hd, nh, nkv, q, k, v);
  n.kv = own_kv;
  n.v_norm = true;
  n.rope_q = rope;
  n.rope_k = &rope;
  b.norm_rope_kv(n);
  b.barrier();
  b.mark("qkv_rope_kv_write");

  AttentionSpec at;
  at.layer = l;
  at.q = q;
  at.out = {Act::Attn, 0, spec_.n_embd_q()};
  at.n_q_heads = nh;
  at.head_dim = hd;
  at.scale = spec_.attn_scale;
  at.window = swa ? spec_.sliding_window : 0;
  const ProductOut out[] = {{{Weight::AttnOut, l}, {Act::H}}};
  at.feeds = std::span(&out[0].w, 1);
  b.attention(at);
  b.barrier();
  b.mark("attention");
  b.products({Act::Attn}, T, out);
  b.barrier();
}

// X += post-norm(FFN(norm(X))), the first layers' gates sparsified first.
void Gemma3nForward::ffn(StepBackend& b, uint32_t l, uint32_t T) const {
  const uint32_t E = spec_.n_embd, ff = spec_.n_ff;
  const ProductOut gate_up[] = {{{Weight::FfnGate, l}, {Act::Gate, 0, ff}},
                                {{Weight::FfnUp, l}, {Act::Up, 0, ff}}};
  const WeightRef gate_up_w[] = {gate_up[0].w, gate_up[1].w};
  b.rms_norm({Act::X}, {Weight::FfnNorm, l}, {Act::H}, E, T, gate_up_w);
  b.barrier();
  b.products({Act::H}, T, gate_up);
  b.barrier();
  if (l < spec_.n_layer_sparse) {
    b.gaussian_topk({Act::Gate, 0, ff}, ff, T, spec_.sparsity_std_mul);
    b.barrier();
  }
  const ProductOut down[] = {{{Weight::FfnDown, l}, {Act::H}}};
  b.glu(GluAct::GeluTanh, {Act::Gate, 0, ff}, {Act::Up, 0, ff}, {Act::FfnAct, 0, ff}, ff, T,
        std::span(&down[0].w, 1));
  b.barrier();
  b.products({Act::FfnAct, 0, ff}, T, down);
  b.barrier();
  // The post-norm's residual, then AltUp's correct-router norm of it (router() leaves it).
  const WeightRef router_w[] = {{Weight::AltupRouter, l}};
  b.rms_norm_add_norm({Act::H}, {Weight::PostFfnNorm, l}, {Act::X}, nullptr,
                      {{Act::X}, {Weight::AltupRouterNorm, l}, {Act::AuxB, 0, E}, E, router_w}, T);
  b.barrier();
  b.mark("ffn");
}

// The layer's per-layer input, gated by the corrected active stream, projected, normed and
// added to every other stream.
void Gemma3nForward::per_layer_input(StepBackend& b, uint32_t l, uint32_t T) const {
  const uint32_t E = spec_.n_embd, A = spec_.n_altup, P = spec_.n_embd_altup;
  const uint32_t act = spec_.altup_active;
  b.mul_weight(stream(Act::Alt, act), {Weight::AltupCorrectScale, l}, {Act::AuxB, 0, E}, E, T);
  b.barrier();
  const ProductOut gate[] = {{{Weight::PerLayerInpGate, l}, {Act::Aux, 0, P}}};
  b.products({Act::AuxB, 0, E}, T, gate);
  b.barrier();
  // gelu(gate) * per-layer input is a GLU with the per-layer rows as its up half: one pass that
  // also writes the projection's q8 input.
  const ProductOut proj[] = {{{Weight::PerLayerProj, l}, {Act::AuxB, 0, E}}};
  b.glu(GluAct::GeluTanh, {Act::Aux, 0, P}, {Act::PerLayer, l * P, spec_.n_layer * P},
        {Act::Aux, 0, P}, P, T, std::span(&proj[0].w, 1));
  b.barrier();
  b.products({Act::Aux, 0, P}, T, proj);
  b.barrier();
  b.rms_norm({Act::AuxB, 0, E}, {Weight::PerLayerPostNorm, l}, {Act::AuxB, 0, E}, E, T);
  b.barrier();
  // llama.cpp adds it to streams 1.. (the active one is stream 0).
  for (uint32_t i = 1; i < A; ++i)
    b.add_rows(stream(Act::Alt, i), {Act::AuxB, 0, E}, stream(Act::Alt, i), E, T, 1.0f);
  b.barrier();
  b.mark("per_layer_input");
}

// X = the mean of the active stream and the other streams unprojected to its magnitude.
void Gemma3nForward::merge_streams(StepBackend& b, uint32_t T) const {
  const uint32_t E = spec_.n_embd, A = spec_.n_altup;
  const Rows ref = stream(Act::Alt, spec_.altup_active);
  for (uint32_t i = 1; i < A; ++i) {
    const ProductOut unembd[] = {{{Weight::AltupUnembdProj, 0, i - 1}, {Act::Aux, 0, E}}};
    b.products(stream(Act::Alt, i), T, unembd);
    b.barrier();
    b.match_magnitude(ref, {Act::Aux, 0, E}, stream(Act::Alt, i), E, T);
    b.barrier();
  }
  b.mean_streams({Act::Alt}, {Act::X}, E, A, T);
  b.barrier();
}

}  // namespace vkllm::runtime
