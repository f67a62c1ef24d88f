#include "engine/runtime/forward.h"

#include <stdexcept>

#include "engine/runtime/gemma3n_forward.h"
#include "engine/runtime/gemma4_forward.h"
#include "engine/runtime/mamba2_forward.h"
#include "engine/runtime/qkv_projection.h"
#include "engine/runtime/qwen35_forward.h"
#include "engine/runtime/routed_experts.h"
#include "engine/runtime/shared_expert.h"

namespace vkllm::runtime {

using model::Weight;

Forward::BlockInputs Forward::qkv_inputs(uint32_t l) const {
  if (spec_.is_recurrent(l) && spec_.ssm_grouped_heads) {
    return {{{Weight::AttnQKV, l}, {Weight::AttnGate, l}, {Weight::SsmBetaAlpha, l}}, 3};
  }
  if (spec_.is_recurrent(l) && spec_.is_delta_net()) {
    return {
        {{Weight::AttnQKV, l}, {Weight::AttnGate, l}, {Weight::SsmAlpha, l}, {Weight::SsmBeta, l}},
        4};
  }
  if (spec_.is_recurrent(l)) return {{{Weight::ShortConvInProj, l}}, 1};
  if (spec_.fused_qkv) return {{{Weight::AttnQKV, l}}, 1};
  return {{{Weight::AttnQ, l}, {Weight::AttnK, l}, {Weight::AttnV, l}}, 3};
}

Forward::BlockInputs Forward::ffn_inputs(uint32_t l) const {
  // The router reads H first, then the experts (whose q8 copy of H the norm may write).
  if (spec_.is_moe_layer(l)) return {{{Weight::FfnGateInp, l}, {Weight::FfnUpExps, l}}, 2};
  if (spec_.fused_gate_up) return {{{Weight::FfnUp, l}}, 1};  // gate and up stacked
  return {{{Weight::FfnGate, l}, {Weight::FfnUp, l}}, 2};
}

WeightRef Forward::ffn_norm(uint32_t l) const {
  return {spec_.ffn_norm_is_post_attn ? Weight::PostAttnNorm : Weight::FfnNorm, l};
}

GluAct Forward::glu_act() const {
  return glu_act_of(spec_.activation);
}

void Forward::step(StepBackend& b, const StepShape& s) const {
  if (s.injected && spec_.is_gemma3n())
    throw std::invalid_argument(spec_.arch_name + ": embedding rows as step inputs (images)");
  if (spec_.is_gemma3n()) {
    Gemma3nForward(spec_).layers(b, s.n_tokens);
  } else if (spec_.is_gemma4()) {
    Gemma4Forward(spec_).layers(b, s.n_tokens, s.injected);
  } else if (spec_.is_mamba2()) {
    Mamba2Forward(spec_).layers(b, s.n_tokens);
  } else if (spec_.nextn_head) {
    if (!s.injected) throw std::invalid_argument("a NextN block's step needs hidden inputs");
    nextn_input(b, s.n_tokens);
    layers(b, s.n_tokens);
  } else {
    b.embed({Weight::TokenEmbd}, {Act::X}, s.n_tokens, spec_.embed_scale);
    b.barrier();
    if (s.injected) {
      b.inject_rows({Act::X}, spec_.n_embd);
      b.barrier();
    }
    layers(b, s.n_tokens, s.injected);
  }
  b.timestamp("layers");
  output(b, s);
}

void Forward::nextn_input(StepBackend& b, uint32_t T) const {
  const uint32_t E = spec_.n_embd;
  b.embed({Weight::TokenEmbd}, {Act::X}, T, spec_.embed_scale);
  b.inject_rows({Act::H}, E);
  b.barrier();
  // Side by side in one 2E-wide row per token, which the projection reads whole.
  b.rms_norm({Act::X}, {Weight::NextnEnorm, 0}, {Act::QKV, 0, 2 * E}, E, T, {});
  b.rms_norm({Act::H}, {Weight::NextnHnorm, 0}, {Act::QKV, E, 2 * E}, E, T, {});
  b.barrier();
  const ProductOut proj[] = {{{Weight::NextnEhProj, 0}, {Act::X}}};
  b.products({Act::QKV}, T, proj);
  b.barrier();
}

void Forward::layers(StepBackend& b, uint32_t T, bool injected) const {
  if (spec_.n_layer > 0) {
    b.rms_norm({Act::X}, {Weight::AttnNorm, 0}, {Act::H}, spec_.n_embd, T, qkv_inputs(0).span());
    b.barrier();
  }
  for (uint32_t l = 0; l < spec_.n_layer; ++l) layer(b, l, T, injected);
}

void Forward::layer(StepBackend& b, uint32_t l, uint32_t T, bool injected) const {
  b.begin_layer(l);
  if (spec_.is_delta_net()) {  // qwen35, qwen35moe, qwen3next
    Qwen35Forward(spec_).block(b, l, T, ffn_inputs(l).span());
  } else if (spec_.is_recurrent(l)) {
    short_conv_block(b, l, T);
  } else {
    attention_block(b, l, T);
  }
  ffn_block(b, l, T, injected && l < spec_.n_deepstack);
  b.end_layer(l);
}

void Forward::attention_block(StepBackend& b, uint32_t l, uint32_t T) const {
  const uint32_t E = spec_.n_embd, hd = spec_.head_dim, nh = spec_.n_head, nkv = spec_.n_head_kv;
  const uint32_t qd = spec_.n_embd_q(), kvd = spec_.n_embd_k_gqa();
  const bool swa = spec_.layer_is_swa[l];

  RopeSpec rope;
  rope.head_dim = hd;
  rope.n_dims = spec_.rope_dims;
  rope.neox = spec_.rope_ordering == model::RopeOrdering::NeoX;
  rope.freq_base = swa ? spec_.rope_freq_base_swa : spec_.rope_freq_base;
  rope.freq_scale = swa ? spec_.rope_freq_scale_swa : spec_.rope_freq_scale;
  rope.freq_factors = spec_.has_rope_freqs;
  if (spec_.uses_mrope()) {
    rope.mrope_sections = spec_.mrope_sections;
    rope.mrope_interleaved = spec_.mrope_interleaved;
  }
  // Llama 4's NoPE layers rotate nothing; only they take the query temperature there.
  const bool nope = spec_.is_nope(l);
  RopeSpec rope_q = rope;
  rope_q.rotate = !nope;
  if (spec_.layer_nope.empty() || nope) {
    rope_q.temp_scale = spec_.attn_temp_scale;
    rope_q.temp_floor = spec_.attn_temp_floor;
    rope_q.temp_offset = spec_.attn_temp_offset;
  }
  const QkvProducts qkv = qkv_products(spec_, l);
  const auto [q, k, v] = qkv.rows;
  // The fused path rotates Q and K alike: a query temperature takes the separate rope.
  if (!spec_.qkv_bias && !spec_.qk_norm && spec_.attn_temp_scale == 0.0f && !spec_.kq_plain_norm &&
      spec_.layer_nope.empty() && !spec_.uses_mrope()) {
    b.products_then_rope_kv({Act::H}, T, qkv.span(), {l, rope, q, k, v, nh});
    b.barrier();
    b.mark("qkv_rope_kv_write");
  } else {
    b.products({Act::H}, T, qkv.span());
    b.barrier();
    b.mark("qkv");
    if (spec_.qkv_bias) {
      b.add_bias({Weight::AttnQBias, l}, {Act::Q}, qd, T);
      b.add_bias({Weight::AttnKBias, l}, {Act::K}, kvd, T);
      b.add_bias({Weight::AttnVBias, l}, {Act::V}, kvd, T);
      b.barrier();
    }
    if (spec_.qk_norm && !spec_.kq_plain_norm) {  // the norms inside the rotation and writes
      auto n = StepBackend::NormRopeKv::of_layer(l, T, hd, nh, nkv, q, k, v);
      n.rope_q = rope_q;
      n.rope_k = nope ? nullptr : &rope;
      b.norm_rope_kv(n);
    } else {
      if (spec_.qk_norm) {
        b.rms_norm({Act::Q}, {Weight::AttnQNorm, l}, {Act::Q}, hd, T * nh);
        b.rms_norm({Act::K}, {Weight::AttnKNorm, l}, {Act::K}, hd, T * nkv);
        b.barrier();
      }
      // Llama 4's L2 norm after RoPE in llama.cpp: a rotation keeps each head's norm, so before.
      if (spec_.kq_plain_norm && !nope) {
        b.rms_norm_plain({Act::Q}, {Act::Q}, hd, T * nh);
        b.rms_norm_plain({Act::K}, {Act::K}, hd, T * nkv);
        b.barrier();
      }
      if (rope_q.rotate || rope_q.temp_scale != 0.0f) b.rope(rope_q, q, nh);
      b.write_kv(l, /*value=*/false, nope ? nullptr : &rope, k);
      b.write_kv(l, /*value=*/true, nullptr, v);
    }
    b.barrier();
    b.mark("rope_kv_write");
  }

  AttentionSpec at;
  at.layer = l;
  at.q = q;
  at.out = {Act::Attn, 0, qd};
  at.n_q_heads = nh;
  at.head_dim = hd;
  at.scale = spec_.attn_scale;
  at.softcap = spec_.attn_softcap;
  at.causal = spec_.causal_attn;
  // Non-causal (EmbeddingGemma): llama.cpp's symmetric window sees |qp - kp| <= n_swa / 2.
  at.window = !swa || spec_.attn_chunk ? 0
              : at.causal              ? spec_.sliding_window
                                       : spec_.sliding_window / 2 + 1;
  at.chunk = swa ? spec_.attn_chunk : 0;
  at.sinks = spec_.attn_sinks;
  const WeightRef wo{Weight::AttnOut, l};
  at.feeds = std::span(&wo, 1);
  b.attention(at);
  b.barrier();
  b.mark("attention");

  if (spec_.post_norms) {  // the post-norm's residual, then the FFN's norm
    const ProductOut out[] = {{wo, {Act::H}}};
    b.products({Act::Attn}, T, out);
    b.barrier();
    const BlockInputs ffn = ffn_inputs(l);
    b.rms_norm_add_norm({Act::H}, {Weight::PostAttnNorm, l}, {Act::X}, nullptr,
                        {{Act::X}, ffn_norm(l), {Act::H}, E, ffn.span()}, T);
  } else if (spec_.attn_out_bias) {
    const ProductOut out[] = {{wo, {Act::X}, /*accumulate=*/true}};
    b.products({Act::Attn}, T, out);
    b.barrier();
    b.add_bias({Weight::AttnOutBias, l}, {Act::X}, E, T);
    b.barrier();
    b.rms_norm({Act::X}, ffn_norm(l), {Act::H}, E, T, ffn_inputs(l).span());
  } else {
    block_out_then_ffn_norm(b, l, T, wo);
  }
  b.barrier();
  b.mark("attn_out_ffn_norm");
}

void Forward::block_out_then_ffn_norm(StepBackend& b, uint32_t l, uint32_t T, WeightRef wo) const {
  const BlockInputs ffn = ffn_inputs(l);
  b.products_then_norm({Act::Attn}, T, {wo, {Act::X}, /*accumulate=*/true},
                       {{Act::X}, ffn_norm(l), {Act::H}, spec_.n_embd, ffn.span()});
}

void Forward::short_conv_block(StepBackend& b, uint32_t l, uint32_t T) const {
  const ProductOut in[] = {{{Weight::ShortConvInProj, l}, {Act::QKV}}};
  b.products({Act::H}, T, in);
  b.barrier();
  b.mark("in_proj");
  ShortConvSpec c;
  c.layer = l;
  c.bcx = {Act::QKV};
  c.out = {Act::Attn};
  c.n_embd = spec_.n_embd;
  c.l_cache = spec_.shortconv_l_cache;
  const WeightRef wo{Weight::ShortConvOutProj, l};
  c.feeds = std::span(&wo, 1);
  b.short_conv(c);
  b.barrier();
  b.mark("short_conv");
  block_out_then_ffn_norm(b, l, T, wo);
  b.barrier();
  b.mark("conv_out_ffn_norm");
}

void Forward::ffn_block(StepBackend& b, uint32_t l, uint32_t T, bool deepstack) const {
  const uint32_t E = spec_.n_embd, ff = spec_.n_ff;

  const BlockInputs inputs = ffn_inputs(l);
  if (spec_.is_moe_layer(l)) {
    moe_block(b, l, T);
    return;
  }
  Rows gate{Act::Gate}, up{Act::Up};
  ProductOut outs[2] = {{inputs.w[0], {Act::Gate}}, {inputs.w[1], {Act::Up}}};
  size_t n_outs = 2;
  if (spec_.fused_gate_up) {
    outs[0] = {inputs.w[0], {Act::Up}};
    n_outs = 1;
    gate = {Act::Up, 0, 2 * ff};
    up = {Act::Up, ff, 2 * ff};
  }
  const WeightRef down[] = {{Weight::FfnDown, l}};
  const GluAct act = glu_act();
  b.products_then_glu({Act::H}, T, std::span(outs, n_outs),
                      {act, gate, up, {Act::FfnAct}, ff, down});
  b.barrier();
  b.mark("gate_up_glu");
  if (spec_.post_norms) {
    if (deepstack) throw std::logic_error("deepstack slices with post norms");
    const ProductOut out[] = {{down[0], {Act::H}}};
    b.products({Act::FfnAct}, T, out);
    b.barrier();
    if (l + 1 < spec_.n_layer) {  // the post-norm's residual, then the next layer's norm
      const BlockInputs qkv = qkv_inputs(l + 1);
      b.rms_norm_add_norm({Act::H}, {Weight::PostFfnNorm, l}, {Act::X}, nullptr,
                          {{Act::X}, {Weight::AttnNorm, l + 1}, {Act::H}, E, qkv.span()}, T);
    } else {
      b.rms_norm_add({Act::H}, {Weight::PostFfnNorm, l}, {Act::X}, {Act::X}, E, T);
    }
  } else if (l + 1 < spec_.n_layer && !deepstack) {
    // The next layer's attention norm; the last layer's sum goes to the output norm instead.
    const BlockInputs qkv = qkv_inputs(l + 1);
    b.products_then_norm({Act::FfnAct}, T, {down[0], {Act::X}, /*accumulate=*/true},
                         {{Act::X}, {Weight::AttnNorm, l + 1}, {Act::H}, E, qkv.span()});
  } else {
    const ProductOut out[] = {{down[0], {Act::X}, /*accumulate=*/true}};
    b.products({Act::FfnAct}, T, out);
    if (deepstack) {
      // Qwen3-VL: the image rows' deepstack slice joins the layer's output before the next
      // layer's norm reads it.
      b.barrier();
      b.add_injected_slice({Act::X}, E, l + 1);
      if (l + 1 < spec_.n_layer) {
        b.barrier();
        b.rms_norm({Act::X}, {Weight::AttnNorm, l + 1}, {Act::H}, E, T, qkv_inputs(l + 1).span());
      }
    }
  }
  b.barrier();
  b.mark(l + 1 < spec_.n_layer ? "down_attn_norm" : "down");
}

// The experts add their weighted sum into the residual stream, then the shared expert (where the
// model has one) its output; the next layer's attention norm (chained) follows as its own
// operation.
void Forward::moe_block(StepBackend& b, uint32_t l, uint32_t T) const {
  if (spec_.post_norms) throw std::logic_error("mixture-of-experts with post norms");
  b.moe_ffn(routed_experts(spec_, l), T);
  b.barrier();
  b.mark("moe");
  shared_expert(b, spec_, l, T, {Act::H});
  if (l + 1 < spec_.n_layer) {
    b.rms_norm({Act::X}, {Weight::AttnNorm, l + 1}, {Act::H}, spec_.n_embd, T,
               qkv_inputs(l + 1).span());
    b.barrier();
    b.mark("attn_norm");
  }
}

// Only the rows that produce logits go through the final norm and the LM head.
void Forward::output(StepBackend& b, const StepShape& s) const {
  const uint32_t R = s.n_rows, E = spec_.n_embd, V = spec_.n_vocab;
  // LFM2's output norm is stored as token_embd_norm (llama.cpp's LLM_TENSOR_OUTPUT_NORM_LFM2).
  const WeightRef norm{spec_.arch == model::Arch::Lfm2 ? Weight::TokenEmbdNorm
                                                       : Weight::OutputNorm};
  if (s.token_hidden) {
    b.rms_norm({Act::X}, norm, {Act::H}, E, s.n_tokens, {});
    b.barrier();
  }
  if (R == 0) return;
  b.select_rows({Act::X}, {Act::XSel}, E, R);
  b.barrier();
  const WeightRef head[] = {{Weight::Output}};
  b.rms_norm({Act::XSel}, norm, {Act::HSel}, E, R,
             s.hidden ? std::span<const WeightRef>() : std::span<const WeightRef>(head));
  b.barrier();
  if (s.hidden) return;
  const ProductOut logits[] = {{head[0], {Act::Logits}}};
  b.products({Act::HSel}, R, logits);
  b.barrier();
  if (spec_.logit_scale != 1.0f) {  // Granite divides its logits
    b.scale_rows({Act::Logits}, V, R, 1.0f / spec_.logit_scale);
    b.barrier();
  }
  if (spec_.final_softcap > 0) {
    b.softcap({Act::Logits}, uint64_t(R) * V, spec_.final_softcap);
    b.barrier();
  }
  b.argmax({Act::Logits}, V, R);
  b.barrier();
}

}  // namespace vkllm::runtime
