#include "engine/runtime/encoder.h"

#include "engine/runtime/weight_ops.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include "engine/kv/kv_layout.h"
#include "engine/vulkan/attention.h"
#include "engine/vulkan/matmul_ops.h"
#include "engine/vulkan/ops.h"

namespace vkllm::runtime {

namespace {

using model::Pooling;
using model::Weight;

}  // namespace

struct Encoder::Impl {
  vk::Context& ctx;
  const Model& m;
  const model::ModelSpec& spec;
  EncoderOptions opt;
  kv::KvLayout layout;
  uint32_t max_input = 0;
  uint32_t out_dim = 0;  // floats per pooled output
  std::optional<vk::Arena> act;
  vk::BufferSlice x, h, q, k, v, qkv, attn, up, gate, ffn_act, pooled, cls_hidden, out, type_row,
      k_cache, v_cache;
  vk::Buffer ids_in, pos_in, meta_in, readback;
  vk::MatmulKernels matmul;
  vk::CommandRecorder rec;
  uint64_t act_bytes = 0;

  Impl(const Model& model, const EncoderOptions& o)
      : ctx(model.context()),
        m(model),
        spec(model.spec()),
        opt(o),
        matmul(ctx.pipelines()),
        rec(ctx.device()) {
    if (!spec.is_encoder()) {
      throw std::invalid_argument("Encoder: " + spec.arch_name + " is not an encoder model");
    }
    opt.max_inputs = std::max<uint32_t>(opt.max_inputs, 1);
    opt.max_batch_tokens = std::max(opt.max_batch_tokens, opt.max_inputs);
    max_input = std::min(opt.max_batch_tokens, spec.n_ctx_train);
    out_dim = spec.n_embd_out();
    layout.n_kv_heads = spec.n_head_kv;
    layout.head_dim = spec.head_dim;
    // Every input starts a fresh block, so each may leave one partly used.
    layout.num_blocks = opt.max_batch_tokens / layout.block_size + opt.max_inputs + 1;
    allocate();
  }

  void allocate() {
    const uint64_t T = opt.max_batch_tokens, S = opt.max_inputs, E = spec.n_embd;
    const uint64_t qd = spec.n_embd_q(), kvd = spec.n_embd_k_gqa(), ff = spec.n_ff;
    const bool fused = spec.fused_qkv;
    const uint64_t sizes[] = {T * E,
                              T * E,
                              fused ? 0 : T * qd,
                              fused ? 0 : T * kvd,
                              fused ? 0 : T * kvd,
                              fused ? T * (qd + 2 * kvd) : 0,
                              T * qd,
                              T * ff,
                              spec.gated_ffn ? 2 * T * ff : 0,
                              S * E,
                              S * E,
                              S * std::max<uint64_t>(out_dim, 1),
                              E};
    constexpr uint64_t align = 256;
    act_bytes = 2 * (layout.region_bytes() + 2 * align);
    for (uint64_t s : sizes) act_bytes += (s * 4 + align - 1) / align * align + align;
    act.emplace(ctx.device(), "encoder activations", act_bytes);
    auto f32 = [&](uint64_t n) { return n ? act->allocate(n * 4) : vk::BufferSlice{}; };
    x = f32(T * E);
    h = f32(T * E);
    if (fused) {
      qkv = f32(T * (qd + 2 * kvd));
    } else {
      q = f32(T * qd);
      k = f32(T * kvd);
      v = f32(T * kvd);
    }
    attn = f32(T * qd);
    up = f32(T * ff);
    if (spec.gated_ffn) {
      gate = f32(T * ff);
      ffn_act = f32(T * ff);
    }
    pooled = f32(S * E);
    cls_hidden = f32(S * E);
    out = f32(S * std::max<uint32_t>(out_dim, 1));
    type_row = f32(E);
    k_cache = act->allocate(layout.region_bytes());
    v_cache = act->allocate(layout.region_bytes());

    const uint32_t max_meta_words = static_cast<uint32_t>(2 * T + 4 * S + layout.num_blocks);
    ids_in = vk::Buffer(ctx.device(), 4 * T, vk::MemoryKind::Upload, "encoder token ids");
    pos_in = vk::Buffer(ctx.device(), 4 * T, vk::MemoryKind::Upload, "encoder positions");
    meta_in = vk::Buffer(ctx.device(), 4ull * max_meta_words, vk::MemoryKind::Upload,
                         "encoder batch metadata");
    readback = vk::Buffer(ctx.device(), 4 * std::max(T * E, S * std::max<uint64_t>(out_dim, 1)),
                          vk::MemoryKind::Readback, "encoder results");
  }

  void product(const DeviceTensor& w, vk::BufferSlice in, vk::BufferSlice y, uint32_t n,
               bool accumulate = false) {
    vk::MatmulArgs a;
    a.x = in;
    a.y = y;
    a.batch = n;
    a.accumulate = accumulate;
    record_product(matmul, rec, w, a, n <= opt.matvec_max_batch);
  }

  void bias(Weight w, uint32_t layer, vk::BufferSlice rows, uint32_t n, uint32_t n_rows) {
    vk::ops::add_bias(rec, ctx.pipelines(), rows, m.get(w, layer).data, n, n_rows);
  }

  void layer_norm(Weight w, Weight b, uint32_t layer, vk::BufferSlice rows, uint32_t n_rows) {
    vk::ops::LayerNormArgs a;
    a.x = a.y = rows;
    a.weight = m.get(w, layer).data;
    a.bias = m.get(b, layer).data;
    a.n = spec.n_embd;
    a.n_rows = n_rows;
    a.eps = spec.norm_eps;
    vk::ops::layer_norm(rec, ctx.pipelines(), a);
  }

  void get_rows(const DeviceTensor& t, vk::BufferSlice ids, uint32_t n, vk::BufferSlice dst) {
    vk::ops::GetRowsArgs g;
    g.ids = ids;
    g.n_tokens = n;
    g.out = dst;
    record_get_rows(rec, ctx.pipelines(), t, g);
  }

  // x = LayerNorm(token embedding + token type 0 (+ learned position)).
  void record_embeddings(uint32_t T) {
    auto& P = ctx.pipelines();
    const uint32_t E = spec.n_embd;
    get_rows(m.get(Weight::TokenEmbd), ids_in.slice(), T, x);
    // pos_in[0] is 0 (the first input's first position): it selects token type 0.
    get_rows(m.get(Weight::TokenTypes), pos_in.slice(), 1, type_row);
    if (spec.position_embd) get_rows(m.get(Weight::PosEmbd), pos_in.slice(), T, h);
    rec.barrier();
    if (spec.position_embd) vk::ops::add(rec, P, x, h, x, T * E);
    vk::ops::add_bias(rec, P, x, type_row, E, T);  // disjoint elements of x: no barrier between
    rec.barrier();
    layer_norm(Weight::TokenEmbdNorm, Weight::TokenEmbdNormBias, 0, x, T);
    rec.barrier();
  }

  void record_layer(uint32_t l, uint32_t T, const vk::ops::BatchInfo& batch, uint32_t max_q_len) {
    auto& P = ctx.pipelines();
    const uint32_t E = spec.n_embd, hd = spec.head_dim, nh = spec.n_head, nkv = spec.n_head_kv;
    const uint32_t qd = spec.n_embd_q(), kvd = spec.n_embd_k_gqa(), ff = spec.n_ff;

    vk::ops::HeadRows qrows{q, 0, qd}, krows{k, 0, kvd}, vrows{v, 0, kvd};
    if (spec.fused_qkv) {
      const uint32_t stride = qd + 2 * kvd;
      product(m.get(Weight::AttnQKV, l), x, qkv, T);
      qrows = {qkv, 0, stride};
      krows = {qkv, qd, stride};
      vrows = {qkv, qd + kvd, stride};
    } else {
      product(m.get(Weight::AttnQ, l), x, q, T);
      product(m.get(Weight::AttnK, l), x, k, T);
      product(m.get(Weight::AttnV, l), x, v, T);
    }
    rec.barrier();
    if (m.find(Weight::AttnQBias, l)) {
      bias(Weight::AttnQBias, l, q, qd, T);
      bias(Weight::AttnKBias, l, k, kvd, T);
      bias(Weight::AttnVBias, l, v, kvd, T);
      rec.barrier();
    }
    const vk::ops::CacheRegion kc{k_cache, nkv, layout.block_size};
    const vk::ops::CacheRegion vc{v_cache, nkv, layout.block_size};
    vk::ops::RopeParams rope;
    rope.head_dim = hd;
    rope.n_dims = spec.rope_dims;
    rope.neox = spec.rope_ordering == model::RopeOrdering::NeoX;
    rope.freq_base = spec.rope_freq_base;
    rope.freq_scale = spec.rope_freq_scale;
    if (spec.rope) vk::ops::rope(rec, P, rope, batch, qrows, qrows, nh);
    vk::ops::write_kv(rec, P, spec.rope ? &rope : nullptr, batch, krows, hd, kc);
    vk::ops::write_kv(rec, P, nullptr, batch, vrows, hd, vc);
    rec.barrier();

    vk::ops::AttentionArgs at;
    at.q = qrows;
    at.k_cache = kc;
    at.v_cache = vc;
    at.batch = batch;
    at.max_q_len = max_q_len;
    at.out = {attn, 0, qd};
    at.n_q_heads = nh;
    at.head_dim = hd;
    at.scale = spec.attn_scale;
    at.causal = spec.causal_attn;
    vk::ops::attention(rec, P, at);
    rec.barrier();

    // Post-norm: x = LN(x + attn_out(attn) + b), then x = LN(x + ffn(x)).
    product(m.get(Weight::AttnOut, l), attn, x, T, /*accumulate=*/true);
    rec.barrier();
    if (m.find(Weight::AttnOutBias, l)) {
      bias(Weight::AttnOutBias, l, x, E, T);
      rec.barrier();
    }
    layer_norm(Weight::AttnOutNorm, Weight::AttnOutNormBias, l, x, T);
    rec.barrier();

    if (spec.gated_ffn) {
      product(m.get(Weight::FfnGate, l), x, gate, T);
      product(m.get(Weight::FfnUp, l), x, up, T);
      rec.barrier();
      vk::ops::GluArgs g;
      g.gate = gate;
      g.up = up;
      g.out = ffn_act;
      g.n = ff;
      g.n_rows = T;
      g.act = spec.activation == model::Activation::SiLU ? vk::ops::GluActivation::Silu
                                                         : vk::ops::GluActivation::GeluTanh;
      vk::ops::glu(rec, P, g);
      rec.barrier();
      product(m.get(Weight::FfnDown, l), ffn_act, x, T, /*accumulate=*/true);
    } else {
      product(m.get(Weight::FfnUp, l), x, up, T);
      rec.barrier();
      if (m.find(Weight::FfnUpBias, l)) {
        bias(Weight::FfnUpBias, l, up, ff, T);
        rec.barrier();
      }
      vk::ops::gelu(rec, P, up, up, T * ff);
      rec.barrier();
      product(m.get(Weight::FfnDown, l), up, x, T, /*accumulate=*/true);
    }
    rec.barrier();
    if (m.find(Weight::FfnDownBias, l)) {
      bias(Weight::FfnDownBias, l, x, E, T);
      rec.barrier();
    }
    layer_norm(Weight::LayerOutNorm, Weight::LayerOutNormBias, l, x, T);
    rec.barrier();
  }

  // Pooled rows (or the rank head's outputs) into `out`, S rows of out_dim.
  void record_pooling(const vk::ops::BatchInfo& batch) {
    auto& P = ctx.pipelines();
    const uint32_t E = spec.n_embd, S = batch.n_seqs;
    using vk::ops::PoolMode;
    switch (spec.pooling) {
      case Pooling::None:
        return;
      case Pooling::Mean:
        vk::ops::pool_rows(rec, P, PoolMode::Mean, batch, x, E, out);
        return;
      case Pooling::Cls:
        vk::ops::pool_rows(rec, P, PoolMode::First, batch, x, E, out);
        return;
      case Pooling::Last:
        vk::ops::pool_rows(rec, P, PoolMode::Last, batch, x, E, out);
        return;
      case Pooling::Rank:
        break;
    }
    // As llama.cpp: the first token, then dense + tanh (when present), then the output layer.
    vk::ops::pool_rows(rec, P, PoolMode::First, batch, x, E, pooled);
    rec.barrier();
    vk::BufferSlice head_in = pooled;
    if (spec.cls_dense) {
      product(m.get(Weight::Cls), pooled, cls_hidden, S);
      rec.barrier();
      vk::ops::add_bias(rec, P, cls_hidden, m.get(Weight::ClsBias).data, E, S);
      rec.barrier();
      vk::ops::tanh(rec, P, cls_hidden, cls_hidden, S * E);
      rec.barrier();
      head_in = cls_hidden;
    }
    if (const DeviceTensor* w = m.find(Weight::ClsOut)) {
      product(*w, head_in, out, S);
      rec.barrier();
      if (const DeviceTensor* b = m.find(Weight::ClsOutBias)) {
        vk::ops::add_bias(rec, P, out, b->data, out_dim, S);
      }
    } else {
      rec.copy(head_in.sub(0, uint64_t(S) * E * 4), out);
    }
  }
};

Encoder::Encoder(const Model& model, const EncoderOptions& options)
    : impl_(std::make_unique<Impl>(model, options)) {
  if (impl_->opt.warm_up) warm_up();
}

size_t Encoder::warm_up() {
  Impl& I = *impl_;
  auto& P = I.ctx.pipelines();
  const uint64_t before = P.stats().created;
  std::vector<vk::PipelineDesc> descs;
  {
    vk::PipelineCache::Collector collect(P);
    I.rec.set_dry(true);
    struct Wet {
      vk::CommandRecorder& rec;
      ~Wet() { rec.set_dry(false); }
    } wet{I.rec};
    const std::vector<int32_t> zeros(I.max_input, 0);
    auto pass = [&](std::vector<uint32_t> lengths) {
      std::vector<std::span<const int32_t>> inputs;
      for (uint32_t n : lengths) inputs.push_back(std::span(zeros).first(n));
      encode(inputs);
    };
    // Input lengths up to 16 pick the attention's rows per workgroup and the matvec widths;
    // above matvec_max_batch tokens the GEMM; 2..8 inputs the rank head's matvec widths.
    for (uint32_t n = 1; n <= std::min(16u, I.max_input); ++n) pass({n});
    pass({std::min(I.max_input, I.opt.matvec_max_batch + 1)});
    pass({I.max_input});
    for (uint32_t s = 2; s <= std::min(8u, I.opt.max_inputs); ++s) {
      pass(std::vector<uint32_t>(s, 1));
    }
    descs = collect.descs();
  }
  P.build(descs);
  const uint64_t created = P.stats().created - before;
  if (created > 0) P.save();
  return created;
}

Encoder::~Encoder() = default;

const EncoderOptions& Encoder::options() const {
  return impl_->opt;
}
uint32_t Encoder::max_input_tokens() const {
  return impl_->max_input;
}
uint64_t Encoder::device_bytes() const {
  return impl_->act_bytes;
}
std::vector<std::pair<std::string, double>> Encoder::last_step_timings() const {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& t : impl_->rec.timings()) out.emplace_back(t.label, t.ms);
  return out;
}

std::vector<std::vector<float>> Encoder::encode(std::span<const std::span<const int32_t>> inputs) {
  Impl& I = *impl_;
  const auto& spec = I.spec;
  if (inputs.empty()) return {};
  if (inputs.size() > I.opt.max_inputs) {
    throw std::invalid_argument("Encoder: " + std::to_string(inputs.size()) +
                                " inputs exceed the limit of " + std::to_string(I.opt.max_inputs));
  }
  uint32_t T = 0;
  for (const auto& in : inputs) {
    if (in.empty()) throw std::invalid_argument("Encoder: empty input");
    if (in.size() > I.max_input) {
      throw std::invalid_argument("Encoder: an input of " + std::to_string(in.size()) +
                                  " tokens exceeds the limit of " + std::to_string(I.max_input));
    }
    T += static_cast<uint32_t>(in.size());
  }
  if (T > I.opt.max_batch_tokens) {
    throw std::invalid_argument("Encoder: " + std::to_string(T) + " tokens exceed the limit of " +
                                std::to_string(I.opt.max_batch_tokens));
  }

  // Token ids, positions and private block tables (consecutive scratch blocks per input).
  auto* ids = reinterpret_cast<uint32_t*>(I.ids_in.mapped());
  auto* pos = reinterpret_cast<uint32_t*>(I.pos_in.mapped());
  const uint32_t bs = I.layout.block_size;
  std::vector<uint32_t> blocks;
  std::vector<std::pair<size_t, size_t>> table_ranges;
  uint32_t t = 0, max_len = 0;
  for (const auto& in : inputs) {
    const auto n = static_cast<uint32_t>(in.size());
    for (uint32_t j = 0; j < n; ++j) {
      if (in[j] < 0 || static_cast<uint32_t>(in[j]) >= spec.n_vocab) {
        throw std::invalid_argument("token id " + std::to_string(in[j]) +
                                    " is outside the vocabulary");
      }
      ids[t + j] = static_cast<uint32_t>(in[j]);
      pos[t + j] = j;
    }
    const size_t first = blocks.size();
    for (uint32_t b = 0; b < (n + bs - 1) / bs; ++b)
      blocks.push_back(static_cast<uint32_t>(blocks.size()));
    table_ranges.emplace_back(first, blocks.size() - first);
    t += n;
    max_len = std::max(max_len, n);
  }
  std::vector<kv::BatchSequence> seqs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto n = static_cast<uint32_t>(inputs[i].size());
    seqs.push_back(
        {std::span<const uint32_t>(blocks).subspan(table_ranges[i].first, table_ranges[i].second),
         n, n});
  }
  const kv::BatchMeta meta = kv::build_batch_meta(seqs, bs);
  std::memcpy(I.meta_in.mapped(), meta.words.data(), meta.words.size() * 4);
  const vk::ops::BatchInfo binfo{I.meta_in.slice(), meta.n_tokens, meta.n_seqs};
  const auto S = static_cast<uint32_t>(inputs.size());

  auto& rec = I.rec;
  rec.begin();
  rec.timestamp("start");
  I.record_embeddings(T);
  for (uint32_t l = 0; l < spec.n_layer; ++l) I.record_layer(l, T, binfo, max_len);
  rec.timestamp("layers");
  const bool per_token = spec.pooling == Pooling::None;
  const uint64_t result_bytes =
      per_token ? uint64_t(T) * spec.n_embd * 4 : uint64_t(S) * I.out_dim * 4;
  I.record_pooling(binfo);
  rec.barrier();
  rec.copy((per_token ? I.x : I.out).sub(0, result_bytes), I.readback.slice(0, result_bytes));
  rec.timestamp("output");
  rec.submit_and_wait();

  const auto* r = reinterpret_cast<const float*>(I.readback.mapped());
  std::vector<std::vector<float>> result(S);
  uint64_t at = 0;
  for (uint32_t i = 0; i < S; ++i) {
    const uint64_t len = per_token ? inputs[i].size() * uint64_t(spec.n_embd) : I.out_dim;
    result[i].assign(r + at, r + at + len);
    at += len;
  }
  return result;
}

}  // namespace vkllm::runtime
