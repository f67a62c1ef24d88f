#include "engine/runtime/qwen35_forward.h"

namespace vkllm::runtime {

using model::Weight;

void Qwen35Forward::block(StepBackend& b, uint32_t l, uint32_t T,
                          std::span<const WeightRef> ffn_inputs) const {
  if (spec_.is_recurrent(l)) {
    delta_net(b, l, T, ffn_inputs);
  } else {
    attention(b, l, T, ffn_inputs);
  }
}

void Qwen35Forward::attention(StepBackend& b, uint32_t l, uint32_t T, Feeds ffn) const {
  const uint32_t hd = spec_.head_dim, nh = spec_.n_head, nkv = spec_.n_head_kv;
  const uint32_t qd = spec_.n_embd_q();
  // Head h of token t: its query at QKV[t][2 h hd], its gate right after.
  const Rows q_and_gate{Act::QKV, 0, 2 * hd}, gate{Act::QKV, hd, 2 * hd};
  const ProductOut qkv[] = {{{Weight::AttnQ, l}, {Act::QKV, 0, 2 * qd}},
                            {{Weight::AttnK, l}, {Act::K}},
                            {{Weight::AttnV, l}, {Act::V}}};
  b.products({Act::H}, T, qkv);
  b.barrier();
  b.mark("qkv");
  b.rms_norm(q_and_gate, {Weight::AttnQNorm, l}, {Act::Q, 0, hd}, hd, T * nh);
  b.rms_norm({Act::K, 0, hd}, {Weight::AttnKNorm, l}, {Act::K, 0, hd}, hd, T * nkv);
  b.barrier();
  RopeSpec rope;
  rope.head_dim = hd;
  rope.n_dims = spec_.rope_dims;
  rope.neox = true;
  rope.freq_base = spec_.rope_freq_base;
  rope.freq_scale = spec_.rope_freq_scale;
  rope.freq_factors = spec_.has_rope_freqs;
  b.rope(rope, {Act::Q, 0, qd}, nh);
  b.write_kv(l, /*value=*/false, &rope, {Act::K, 0, spec_.n_embd_k_gqa()});
  b.write_kv(l, /*value=*/true, nullptr, {Act::V, 0, spec_.n_embd_v_gqa()});
  b.barrier();
  b.mark("rope_kv_write");

  AttentionSpec at;
  at.layer = l;
  at.q = {Act::Q, 0, qd};
  at.out = {Act::Attn, 0, qd};
  at.n_q_heads = nh;
  at.head_dim = hd;
  at.scale = spec_.attn_scale;
  b.attention(at);
  b.barrier();
  b.mark("attention");
  b.gate_rows(GateAct::Sigmoid, {Act::Attn, 0, hd}, gate, hd, T * nh);
  b.barrier();
  b.mark("output_gate");
  out_then_ffn_norm(b, l, T, Weight::AttnOut, ffn);
}

void Qwen35Forward::delta_net(StepBackend& b, uint32_t l, uint32_t T, Feeds ffn) const {
  const uint32_t W = spec_.qkv_act_width(), C = spec_.ssm_conv_channels();
  const uint32_t vd = spec_.ssm_value_dim(), nv = spec_.ssm_n_v_heads, hd = spec_.ssm_head_dim;
  const model::ModelSpec::DeltaNetRow row = spec_.delta_net_row();
  const uint32_t z = row.z, alpha = row.alpha, conv = row.conv;
  // Qwen3-Next: one product of beta|alpha per key head group of r value heads, at alpha's place
  // (it has room for 2 x nv floats up to the conv's part).
  const bool grouped = spec_.ssm_grouped_heads;
  const uint32_t r = nv / spec_.ssm_n_k_heads;
  ProductOut in[] = {{{Weight::AttnQKV, l}, {Act::QKV, 0, W}},
                     {{Weight::AttnGate, l}, {Act::QKV, z, W}},
                     {{Weight::SsmAlpha, l}, {Act::QKV, alpha, W}},
                     {{Weight::SsmBeta, l}, {Act::QKV, row.beta, W}}};
  if (grouped) in[2] = {{Weight::SsmBetaAlpha, l}, {Act::QKV, alpha, W}};
  b.products({Act::H}, T, std::span<const ProductOut>(in, grouped ? 3 : 4));
  b.barrier();
  b.mark("in_proj");
  b.ssm_conv({l, {Act::QKV, 0, W}, {Act::QKV, conv, W}, C, spec_.ssm_conv_kernel});
  b.barrier();
  b.mark("ssm_conv");
  DeltaNetSpec d;
  d.layer = l;
  d.qkv = {Act::QKV, conv, W};
  d.alpha = {Act::QKV, grouped ? alpha + r : alpha, W};
  d.beta = {Act::QKV, grouped ? alpha : row.beta, W};
  d.grouped = grouped;
  d.out = {Act::Attn, 0, vd};
  d.n_k_heads = spec_.ssm_n_k_heads;
  d.n_v_heads = nv;
  d.head_dim = hd;
  d.state_offset = spec_.ssm_conv_state_floats();
  d.eps = spec_.norm_eps;
  b.delta_net(d);
  b.barrier();
  b.mark("delta_net");
  const WeightRef wo{Weight::SsmOut, l};
  b.gated_rms_norm({Act::Attn, 0, hd}, {Weight::SsmNorm, l}, {Act::Attn, 0, hd}, hd, T * nv,
                   {Act::QKV, z, W}, nv, std::span(&wo, 1));
  b.barrier();
  b.mark("gated_norm");
  out_then_ffn_norm(b, l, T, Weight::SsmOut, ffn);
}

void Qwen35Forward::out_then_ffn_norm(StepBackend& b, uint32_t l, uint32_t T, Weight wo,
                                      Feeds ffn) const {
  b.products_then_norm({Act::Attn}, T, {{wo, l}, {Act::X}, /*accumulate=*/true},
                       {{Act::X}, {Weight::PostAttnNorm, l}, {Act::H}, spec_.n_embd, ffn});
  b.barrier();
  b.mark("block_out_ffn_norm");
}

}  // namespace vkllm::runtime
