#include "engine/runtime/encoder_forward.h"

#include "engine/runtime/forward.h"
#include "engine/runtime/qkv_projection.h"

namespace vkllm::runtime {

using model::Pooling;
using model::Weight;

void EncoderForward::step(StepBackend& b, const EncoderShape& s) const {
  if (spec_.decoder_layers()) {
    decoder_step(b, s);
    return;
  }
  embeddings(b, s.n_tokens);
  for (uint32_t l = 0; l < spec_.n_layer; ++l) layer(b, l, s.n_tokens);
  b.timestamp("layers");
  pooling(b, s.n_seqs);
  b.barrier();
}

// EmbeddingGemma, as llama.cpp: scaled token embeddings, Gemma 3 layers with bidirectional
// attention, the final norm on every token, pooling, then the dense projections (n_embd ->
// n_dense -> n_embd) of the pooled rows.
void EncoderForward::decoder_step(StepBackend& b, const EncoderShape& s) const {
  const uint32_t T = s.n_tokens, S = s.n_seqs, E = spec_.n_embd;
  b.embed({Weight::TokenEmbd}, {Act::X}, T, spec_.embed_scale);
  b.barrier();
  Forward(spec_).layers(b, T);
  b.barrier();
  b.timestamp("layers");
  b.rms_norm({Act::X}, {Weight::OutputNorm}, {Act::X}, E, T);
  b.barrier();
  if (spec_.pooling == Pooling::None) return;
  const PoolMode mode = spec_.pooling == Pooling::Mean  ? PoolMode::Mean
                        : spec_.pooling == Pooling::Cls ? PoolMode::First
                                                        : PoolMode::Last;
  if (spec_.n_dense == 0) {
    b.pool(mode, {Act::X}, E, {Act::Logits});
    b.barrier();
    return;
  }
  // Logits rows are encoder_rows_width() wide: room for the dense width.
  b.pool(mode, {Act::X}, E, {Act::XSel});
  b.barrier();
  const ProductOut wide[] = {{{Weight::Dense2}, {Act::Logits}}};
  b.products({Act::XSel}, S, wide);
  b.barrier();
  const ProductOut back[] = {{{Weight::Dense3}, {Act::HSel}}};
  b.products({Act::Logits}, S, back);
  b.barrier();
  b.copy({Act::HSel}, {Act::Logits}, uint64_t(S) * E);
  b.barrier();
}

// x = LayerNorm(token embedding + token type 0 (+ learned position)).
void EncoderForward::embeddings(StepBackend& b, uint32_t T) const {
  const uint32_t E = spec_.n_embd;
  b.embed({Weight::TokenEmbd}, {Act::X}, T, 1.0f);
  b.embed_row({Weight::TokenTypes}, 0, {Act::XSel});
  if (spec_.position_embd) b.embed_positions({Weight::PosEmbd}, {Act::H}, T);
  b.barrier();
  if (spec_.position_embd) {
    b.add({Act::X}, {Act::H}, {Act::X}, uint64_t(T) * E);
    // Both passes read and write every element of x: on a GPU that runs dispatches
    // concurrently the second would otherwise add to stale rows (lavapipe, serial, hid it).
    b.barrier();
  }
  b.add_row({Act::XSel}, {Act::X}, E, T);
  b.barrier();
  b.layer_norm({Act::X}, {Weight::TokenEmbdNorm}, {Weight::TokenEmbdNormBias}, {Act::X}, E, T);
  b.barrier();
}

// Post-norm: x = LN(x + attn_out(attn) + b), then x = LN(x + ffn(x)).
void EncoderForward::layer(StepBackend& b, uint32_t l, uint32_t T) const {
  b.begin_layer(l);
  attention_block(b, l, T);
  ffn_block(b, l, T);
  b.end_layer(l);
}

void EncoderForward::attention_block(StepBackend& b, uint32_t l, uint32_t T) const {
  const uint32_t E = spec_.n_embd, hd = spec_.head_dim, nh = spec_.n_head;
  const uint32_t qd = spec_.n_embd_q(), kvd = spec_.n_embd_k_gqa();

  const auto [q, k, v] = project_qkv(b, spec_, l, {Act::X}, T);
  b.barrier();
  if (b.has({Weight::AttnQBias, l})) {
    b.add_bias({Weight::AttnQBias, l}, {Act::Q}, qd, T);
    b.add_bias({Weight::AttnKBias, l}, {Act::K}, kvd, T);
    b.add_bias({Weight::AttnVBias, l}, {Act::V}, kvd, T);
    b.barrier();
  }

  // One scratch K/V region serves every layer: this layer's keys overwrite the last one's.
  RopeSpec rope;
  rope.head_dim = hd;
  rope.n_dims = spec_.rope_dims;
  rope.neox = spec_.rope_ordering == model::RopeOrdering::NeoX;
  rope.freq_base = spec_.rope_freq_base;
  rope.freq_scale = spec_.rope_freq_scale;
  if (spec_.rope) b.rope(rope, q, nh);
  b.write_kv(l, /*value=*/false, spec_.rope ? &rope : nullptr, k);
  b.write_kv(l, /*value=*/true, nullptr, v);
  b.barrier();

  AttentionSpec at;
  at.layer = l;
  at.q = q;
  at.out = {Act::Attn, 0, qd};
  at.n_q_heads = nh;
  at.head_dim = hd;
  at.scale = spec_.attn_scale;
  at.causal = spec_.causal_attn;
  b.attention(at);
  b.barrier();

  const ProductOut out[] = {{{Weight::AttnOut, l}, {Act::X}, /*accumulate=*/true}};
  b.products({Act::Attn}, T, out);
  b.barrier();
  if (b.has({Weight::AttnOutBias, l})) {
    b.add_bias({Weight::AttnOutBias, l}, {Act::X}, E, T);
    b.barrier();
  }
  b.layer_norm({Act::X}, {Weight::AttnOutNorm, l}, {Weight::AttnOutNormBias, l}, {Act::X}, E, T);
  b.barrier();
}

void EncoderForward::ffn_block(StepBackend& b, uint32_t l, uint32_t T) const {
  const uint32_t E = spec_.n_embd, ff = spec_.n_ff;
  const ProductOut down[] = {{{Weight::FfnDown, l}, {Act::X}, /*accumulate=*/true}};
  if (spec_.gated_ffn) {
    const ProductOut gate_up[] = {{{Weight::FfnGate, l}, {Act::Gate}},
                                  {{Weight::FfnUp, l}, {Act::Up}}};
    b.products({Act::X}, T, gate_up);
    b.barrier();
    const GluAct act =
        spec_.activation == model::Activation::SiLU ? GluAct::Silu : GluAct::GeluTanh;
    b.glu(act, {Act::Gate}, {Act::Up}, {Act::FfnAct}, ff, T);
    b.barrier();
    b.products({Act::FfnAct}, T, down);
  } else {
    const ProductOut up[] = {{{Weight::FfnUp, l}, {Act::Up}}};
    b.products({Act::X}, T, up);
    b.barrier();
    if (b.has({Weight::FfnUpBias, l})) {
      b.add_bias({Weight::FfnUpBias, l}, {Act::Up}, ff, T);
      b.barrier();
    }
    b.gelu({Act::Up}, {Act::Up}, uint64_t(T) * ff);
    b.barrier();
    b.products({Act::Up}, T, down);
  }
  b.barrier();
  if (b.has({Weight::FfnDownBias, l})) {
    b.add_bias({Weight::FfnDownBias, l}, {Act::X}, E, T);
    b.barrier();
  }
  b.layer_norm({Act::X}, {Weight::LayerOutNorm, l}, {Weight::LayerOutNormBias, l}, {Act::X}, E, T);
  b.barrier();
}

// Pooled rows (or the rank head's outputs) into Logits, S rows of n_embd_out.
void EncoderForward::pooling(StepBackend& b, uint32_t S) const {
  const uint32_t E = spec_.n_embd;
  switch (spec_.pooling) {
    case Pooling::None:
      return;
    case Pooling::Mean:
      b.pool(PoolMode::Mean, {Act::X}, E, {Act::Logits});
      return;
    case Pooling::Cls:
      b.pool(PoolMode::First, {Act::X}, E, {Act::Logits});
      return;
    case Pooling::Last:
      b.pool(PoolMode::Last, {Act::X}, E, {Act::Logits});
      return;
    case Pooling::Rank:
      break;
  }
  // As llama.cpp: the first token, then dense + tanh (when present), then the output layer.
  b.pool(PoolMode::First, {Act::X}, E, {Act::XSel});
  b.barrier();
  Rows head_in{Act::XSel};
  if (spec_.cls_dense) {
    const ProductOut dense[] = {{{Weight::Cls}, {Act::HSel}}};
    b.products({Act::XSel}, S, dense);
    b.barrier();
    b.add_bias({Weight::ClsBias}, {Act::HSel}, E, S);
    b.barrier();
    b.tanh({Act::HSel}, {Act::HSel}, uint64_t(S) * E);
    b.barrier();
    head_in = {Act::HSel};
  }
  if (b.has({Weight::ClsOut})) {
    const ProductOut head[] = {{{Weight::ClsOut}, {Act::Logits}}};
    b.products(head_in, S, head);
    b.barrier();
    b.add_bias({Weight::ClsOutBias}, {Act::Logits}, spec_.n_embd_out(), S);
  } else {
    b.copy(head_in, {Act::Logits}, uint64_t(S) * E);
  }
}

}  // namespace vkllm::runtime
