#include "engine/runtime/mamba2_forward.h"

#include "engine/runtime/qkv_projection.h"
#include "engine/runtime/routed_experts.h"
#include "engine/runtime/shared_expert.h"

namespace vkllm::runtime {

using model::Weight;

void Mamba2Forward::layers(StepBackend& b, uint32_t T) const {
  b.embed({Weight::TokenEmbd}, {Act::X}, T, spec_.embed_scale);
  b.barrier();
  for (uint32_t l = 0; l < spec_.n_layer; ++l) {
    b.begin_layer(l);
    layer(b, l, T);
    b.end_layer(l);
  }
}

void Mamba2Forward::layer(StepBackend& b, uint32_t l, uint32_t T) const {
  const uint32_t E = spec_.n_embd;
  if (spec_.is_mlp_layer(l) && spec_.is_moe_layer(l)) {  // Nemotron-H MoE's MoE layers
    nemotron_moe(b, l, T);
    return;
  }
  if (spec_.is_mlp_layer(l)) {
    const WeightRef up{Weight::FfnUp, l};
    b.rms_norm({Act::X}, {Weight::AttnNorm, l}, {Act::H}, E, T, std::span(&up, 1));
    b.barrier();
    b.mark("attn_norm");
    relu2_ffn(b, l, T);
    return;
  }
  if (spec_.is_recurrent(l)) {
    const WeightRef in{Weight::SsmIn, l};
    b.rms_norm({Act::X}, {Weight::AttnNorm, l}, {Act::H}, E, T, std::span(&in, 1));
    b.barrier();
    b.mark("attn_norm");
    mamba(b, l, T);
    residual_product(b, {Act::Attn}, spec_.mamba_d_inner, T, {Weight::SsmOut, l});
  } else {
    const WeightRef qkv[] = {{spec_.fused_qkv ? Weight::AttnQKV : Weight::AttnQ, l},
                             {Weight::AttnK, l},
                             {Weight::AttnV, l}};
    b.rms_norm({Act::X}, {Weight::AttnNorm, l}, {Act::H}, E, T,
               std::span<const WeightRef>(qkv, spec_.fused_qkv ? 1 : 3));
    b.barrier();
    b.mark("attn_norm");
    attention(b, l, T);
    residual_product(b, {Act::Attn}, spec_.n_embd_q(), T, {Weight::AttnOut, l});
  }
  if (spec_.arch == model::Arch::GraniteHybrid) {
    if (spec_.is_moe()) {
      moe_ffn(b, l, T);
    } else {
      swiglu_ffn(b, l, T);
    }
  }
}

void Mamba2Forward::moe_ffn(StepBackend& b, uint32_t l, uint32_t T) const {
  // The router reads H first, then the experts (whose q8 copy of H the norm may write).
  const WeightRef feeds[] = {{Weight::FfnGateInp, l}, {Weight::FfnUpExps, l}};
  b.rms_norm({Act::X}, {Weight::FfnNorm, l}, {Act::H}, spec_.n_embd, T, feeds);
  b.barrier();
  b.mark("ffn_norm");
  MoeSpec m = routed_experts(spec_, l);
  // Granite scales the FFN's output (experts + shared expert) by residual_scale.
  m.weight_scale *= spec_.residual_scale;
  b.moe_ffn(m, T);
  b.barrier();
  b.mark("moe");
  shared_expert(b, spec_, l, T, {Act::H}, spec_.residual_scale);
}

void Mamba2Forward::nemotron_moe(StepBackend& b, uint32_t l, uint32_t T) const {
  const uint32_t Lt = spec_.moe_latent;
  const WeightRef feeds[] = {{Weight::FfnGateInp, l}, {Weight::FfnLatentDown, l}};
  b.rms_norm({Act::X}, {Weight::AttnNorm, l}, {Act::H}, spec_.n_embd, T,
             std::span<const WeightRef>(feeds, Lt ? 2 : 1));
  b.barrier();
  b.mark("attn_norm");
  MoeSpec m = routed_experts(spec_, l);
  if (Lt) {
    // Nemotron 3 Super: the experts read ffn_latent_down x (into Attn) and write their sum, which
    // ffn_latent_up adds into the residual, into QKV (both free in an FFN layer); the router
    // reads x itself.
    const ProductOut down[] = {{{Weight::FfnLatentDown, l}, {Act::Attn, 0, Lt}}};
    b.products({Act::H}, T, down);
    b.barrier();
    b.mark("latent_down");
    m.x = {Act::Attn, 0, Lt};
    m.n_embd = Lt;
    m.router_own_input = true;
    m.router_x = {Act::H};
    m.out = {Act::QKV, 0, Lt};
    m.accumulate = false;
  }
  b.moe_ffn(m, T);
  b.barrier();
  b.mark("moe");
  if (Lt) {
    const ProductOut up[] = {{{Weight::FfnLatentUp, l}, {Act::X}, /*accumulate=*/true}};
    b.products({Act::QKV, 0, Lt}, T, up);
    b.barrier();
    b.mark("latent_up");
  }
  shared_expert(b, spec_, l, T, {Act::H});
}

void Mamba2Forward::mamba(StepBackend& b, uint32_t l, uint32_t T) const {
  const uint32_t W = spec_.qkv_act_width(), di = spec_.mamba_d_inner;
  const uint32_t ng = spec_.mamba_n_group, gs = di / ng;
  const model::ModelSpec::Mamba2Row row = spec_.mamba2_row();
  const ProductOut in[] = {{{Weight::SsmIn, l}, {Act::QKV, 0, W}}};
  b.products({Act::H}, T, in);
  b.barrier();
  b.mark("in_proj");
  SsmConvSpec c;
  c.layer = l;
  c.x = {Act::QKV, row.xbc, W};
  c.out = {Act::QKV, row.conv, W};
  c.channels = spec_.mamba_conv_channels();
  c.kernel = spec_.ssm_conv_kernel;
  c.bias = true;
  b.ssm_conv(c);
  b.barrier();
  b.mark("ssm_conv");
  SsmScanSpec s;
  s.layer = l;
  s.xbc = {Act::QKV, row.conv, W};
  s.dt = {Act::QKV, row.dt, W};
  s.out = {Act::Attn, 0, di};
  s.n_head = spec_.mamba_n_head;
  s.head_dim = spec_.mamba_head_dim();
  s.n_group = ng;
  s.d_state = spec_.mamba_d_state;
  s.state_offset = spec_.mamba_conv_state_floats();
  b.ssm_scan(s);
  b.barrier();
  b.mark("ssm_scan");
  // y * silu(z), then the RMS norm of each group with ssm_norm's weight (llama.cpp's order).
  b.gate_rows(GateAct::Silu, {Act::Attn, 0, di}, {Act::QKV, 0, W}, di, T);
  b.barrier();
  b.rms_norm_plain({Act::Attn, 0, gs}, {Act::Attn, 0, gs}, gs, T * ng);
  b.barrier();
  b.mul_weight({Act::Attn, 0, di}, {Weight::SsmNorm, l}, {Act::Attn, 0, di}, di, T);
  b.barrier();
  b.mark("gated_norm");
}

void Mamba2Forward::attention(StepBackend& b, uint32_t l, uint32_t T) const {
  const uint32_t hd = spec_.head_dim, nh = spec_.n_head;
  const uint32_t qd = spec_.n_embd_q();
  // Q, K and V (one product where a backend stacked them at load).
  const auto [q, k, v] = project_qkv(b, spec_, l, {Act::H}, T);
  b.barrier();
  b.mark("qkv");
  RopeSpec rope;
  rope.head_dim = hd;
  rope.n_dims = spec_.rope_dims;
  rope.neox = spec_.rope_ordering == model::RopeOrdering::NeoX;
  rope.freq_base = spec_.rope_freq_base;
  rope.freq_scale = spec_.rope_freq_scale;
  rope.freq_factors = spec_.has_rope_freqs;
  if (spec_.rope) b.rope(rope, q, nh);
  b.write_kv(l, /*value=*/false, spec_.rope ? &rope : nullptr, k);
  b.write_kv(l, /*value=*/true, nullptr, v);
  b.barrier();
  b.mark("rope_kv_write");
  AttentionSpec at;
  at.layer = l;
  at.q = q;
  at.out = {Act::Attn, 0, qd};
  at.n_q_heads = nh;
  at.head_dim = hd;
  at.scale = spec_.attn_scale;
  b.attention(at);
  b.barrier();
  b.mark("attention");
}

void Mamba2Forward::residual_product(StepBackend& b, Rows x, uint32_t n, uint32_t T,
                                     WeightRef w) const {
  // W (s x) = s (W x): Granite's scale of the block output, applied to the product's input.
  if (spec_.residual_scale != 1.0f) {
    b.scale_rows({x.act, x.off, n}, n, T, spec_.residual_scale);
    b.barrier();
  }
  const ProductOut out[] = {{w, {Act::X}, /*accumulate=*/true}};
  b.products({x.act, x.off, n}, T, out);
  b.barrier();
  b.mark("block_out");
}

void Mamba2Forward::relu2_ffn(StepBackend& b, uint32_t l, uint32_t T) const {
  const uint32_t ff = spec_.n_ff;
  const ProductOut up[] = {{{Weight::FfnUp, l}, {Act::Up, 0, ff}}};
  b.products({Act::H}, T, up);
  b.barrier();
  b.gate_rows(GateAct::Relu, {Act::Up, 0, ff}, {Act::Up, 0, ff}, ff, T);  // relu(u) * u
  b.barrier();
  b.mark("up_relu2");
  residual_product(b, {Act::Up}, ff, T, {Weight::FfnDown, l});
}

void Mamba2Forward::swiglu_ffn(StepBackend& b, uint32_t l, uint32_t T) const {
  const uint32_t E = spec_.n_embd, ff = spec_.n_ff;
  // Gate and up, or one product of them stacked (the Vulkan backend stacks them at load).
  const bool fused = spec_.fused_gate_up;
  const WeightRef feeds[] = {{fused ? Weight::FfnUp : Weight::FfnGate, l}, {Weight::FfnUp, l}};
  const std::span<const WeightRef> ffn_inputs(feeds, fused ? 1 : 2);
  b.rms_norm({Act::X}, {Weight::FfnNorm, l}, {Act::H}, E, T, ffn_inputs);
  b.barrier();
  b.mark("ffn_norm");
  ProductOut outs[] = {{feeds[0], {Act::Gate}}, {feeds[1], {Act::Up}}};
  Rows gate{Act::Gate}, up{Act::Up};
  if (fused) {
    outs[0] = {feeds[0], {Act::Up}};
    gate = {Act::Up, 0, 2 * ff};
    up = {Act::Up, ff, 2 * ff};
  }
  // The down product's quantized input is made with the activation unless Granite scales it.
  const WeightRef down[] = {{Weight::FfnDown, l}};
  const bool scaled = spec_.residual_scale != 1.0f;
  b.products_then_glu({Act::H}, T, std::span<const ProductOut>(outs, fused ? 1 : 2),
                      {GluAct::Silu,
                       gate,
                       up,
                       {Act::FfnAct},
                       ff,
                       scaled ? std::span<const WeightRef>() : std::span<const WeightRef>(down)});
  b.barrier();
  b.mark("gate_up_glu");
  residual_product(b, {Act::FfnAct}, ff, T, down[0]);
}

}  // namespace vkllm::runtime
