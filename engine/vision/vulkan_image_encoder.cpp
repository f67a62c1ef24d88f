#include "engine/vision/vulkan_image_encoder.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "engine/kv/kv_layout.h"
#include "engine/vision/gemma4_vision.h"
#include "engine/vision/image_preprocess.h"
#include "engine/vision/vulkan_encoder_parts.h"
#include "engine/vulkan/attention.h"
#include "engine/vulkan/context.h"
#include "engine/vulkan/matmul_ops.h"
#include "engine/vulkan/ops.h"
#include "engine/vulkan/weight_layout.h"

namespace vkllm::vision {

DeviceMatrix upload_matrix(vk::Context& ctx, gguf::TensorType type, std::span<const uint8_t> bytes,
                           uint32_t cols, uint32_t rows, const std::string& name) {
  DeviceMatrix m;
  m.type = type;
  m.rows = rows;
  m.cols = cols;
  m.buffer = vk::Buffer(ctx.device(),
                        vk::device_weight_bytes(type, bytes.size()) + vk::kWeightReadSlackBytes,
                        vk::MemoryKind::DeviceLocal, name);
  vk::upload_weights(ctx.pipelines(), type, m.buffer.slice(), bytes);
  return m;
}

DeviceMatrix upload_matrix(vk::Context& ctx, const TensorRef& t, uint32_t cols) {
  uint64_t n = 1;
  for (uint64_t d : t.shape) n *= d;
  return upload_matrix(ctx, t.type, t.bytes, cols, static_cast<uint32_t>(n / cols), t.name);
}

vk::Buffer upload_floats(vk::Context& ctx, std::span<const float> values, const std::string& name) {
  if (values.empty()) return {};  // an optional tensor the file leaves out
  vk::Buffer b(ctx.device(), values.size_bytes(), vk::MemoryKind::DeviceLocal, name);
  vk::upload(ctx.device(), b.slice(), values);
  return b;
}

vk::Buffer upload_vector(vk::Context& ctx, const TensorRef& t) {
  return upload_floats(ctx, tensor_to_f32(t), t.name);
}

namespace {

// Window order of a grid_w x grid_h patch grid for an M x M merger: window (oy, ox) row-major,
// then its patches row-major, so each merged token's input is M^2 consecutive rows.
std::vector<uint32_t> window_order(uint32_t grid_w, uint32_t grid_h, uint32_t M) {
  std::vector<uint32_t> order;
  order.reserve(size_t{grid_w} * grid_h);
  for (uint32_t oy = 0; oy < grid_h / M; ++oy)
    for (uint32_t ox = 0; ox < grid_w / M; ++ox)
      for (uint32_t dy = 0; dy < M; ++dy)
        for (uint32_t dx = 0; dx < M; ++dx) order.push_back((oy * M + dy) * grid_w + ox * M + dx);
  return order;
}

}  // namespace

void tower_rms_norm(vk::CommandRecorder& rec, vk::PipelineCache& pl, const vk::Buffer& x,
                    const vk::Buffer& w, const vk::Buffer& y, uint32_t n, uint32_t n_rows,
                    float eps) {
  vk::ops::RmsNormArgs a;
  a.x = x.slice();
  a.weight = w.slice();
  a.y = y.slice();
  a.n = n;
  a.n_rows = n_rows;
  a.eps = eps;
  vk::ops::rms_norm(rec, pl, a);
  rec.barrier();
}

void tower_add_bias(vk::CommandRecorder& rec, vk::PipelineCache& pl, const vk::Buffer& x,
                    const vk::Buffer& b, uint32_t n, uint32_t n_rows) {
  if (b.slice()) vk::ops::add_bias(rec, pl, x.slice(), b.slice(), n, n_rows);
}

void tower_norm(vk::CommandRecorder& rec, vk::PipelineCache& pl, bool layer_norm, vk::BufferSlice x,
                const vk::Buffer& w, const vk::Buffer& b, vk::BufferSlice y, uint32_t n,
                uint32_t n_rows, float eps) {
  if (layer_norm) {
    vk::ops::layer_norm(rec, pl, {x, w.slice(), b.slice(), y, n, n_rows, eps});
  } else {
    vk::ops::RmsNormArgs a;
    a.x = x;
    a.weight = w.slice();
    a.y = y;
    a.n = n;
    a.n_rows = n_rows;
    a.eps = eps;
    vk::ops::rms_norm(rec, pl, a);
  }
  rec.barrier();
}

void VulkanImageEncoder::Impl::dynamic_layer(vk::CommandRecorder& rec, const VisionSpec& s,
                                             DynamicTower& tw, const DeviceLayer& L, uint32_t n,
                                             const vk::ops::BatchInfo& batch, uint32_t max_q_len,
                                             const vk::ops::CacheRegion& kc,
                                             const vk::ops::CacheRegion& vc, bool rope_halves) {
  vk::PipelineCache& pl = ctx.pipelines();
  const uint32_t E = s.n_embd, F = s.n_ff, d = s.head_dim();
  // Adds each present bias, then one barrier if any was.
  auto biases = [&](std::initializer_list<std::pair<const vk::Buffer*, const vk::Buffer*>> xb,
                    uint32_t width) {
    bool any = false;
    for (const auto& [x, b] : xb) {
      any = any || static_cast<bool>(b->slice());
      tower_add_bias(rec, pl, *x, *b, width, n);
    }
    if (any) rec.barrier();
  };
  tower_norm(rec, pl, tw.layer_norms, tw.x.slice(), L.ln1_w, L.ln1_b, tw.h.slice(), E, n, s.eps);
  product(rec, L.q, tw.h.slice(), n, tw.q.slice());
  product(rec, L.k, tw.h.slice(), n, tw.k.slice());
  product(rec, L.v, tw.h.slice(), n, tw.v.slice());
  rec.barrier();
  biases({{&tw.q, &L.q_b}, {&tw.k, &L.k_b}, {&tw.v, &L.v_b}}, E);
  for (const vk::Buffer* qk : {&tw.q, &tw.k})
    vk::ops::rope_2d(rec, pl,
                     {qk->slice(), tw.pos.slice(), n, s.n_head, d, E, s.rope_theta, rope_halves});
  rec.barrier();
  tower_attention(rec, pl, batch, kc, vc, tw.q, tw.k, tw.v, tw.att, max_q_len, s.n_head, d);
  product(rec, L.o, tw.att.slice(), n, tw.x.slice(), true);  // the residual add, fused
  rec.barrier();
  biases({{&tw.x, &L.o_b}}, E);
  tower_norm(rec, pl, tw.layer_norms, tw.x.slice(), L.ln2_w, L.ln2_b, tw.h.slice(), E, n, s.eps);
  if (!L.gate.buffer.slice()) {  // Qwen3-VL's GELU MLP
    product(rec, L.up, tw.h.slice(), n, tw.gate.slice());
    rec.barrier();
    biases({{&tw.gate, &L.up_b}}, F);
    vk::ops::gelu(rec, pl, tw.gate.slice(), tw.gate.slice(), n * F);
    rec.barrier();
  } else {
    product(rec, L.gate, tw.h.slice(), n, tw.gate.slice());
    product(rec, L.up, tw.h.slice(), n, tw.up.slice());
    rec.barrier();
    biases({{&tw.gate, &L.gate_b}, {&tw.up, &L.up_b}}, F);
    vk::ops::GluArgs g;
    g.gate = tw.gate.slice();
    g.up = tw.up.slice();
    g.out = tw.gate.slice();
    g.n = F;
    g.n_rows = n;
    g.act = vk::ops::GluActivation::Silu;
    vk::ops::glu(rec, pl, g);
    rec.barrier();
  }
  product(rec, L.down, tw.gate.slice(), n, tw.x.slice(), true);
  rec.barrier();
  biases({{&tw.x, &L.down_b}}, E);
}

void tower_attention(vk::CommandRecorder& rec, vk::PipelineCache& pl,
                     const vk::ops::BatchInfo& batch, const vk::ops::CacheRegion& kc,
                     const vk::ops::CacheRegion& vc, const vk::Buffer& q, const vk::Buffer& k,
                     const vk::Buffer& v, const vk::Buffer& out, uint32_t max_q_len,
                     uint32_t n_head, uint32_t head_dim) {
  vk::ops::write_kv(rec, pl, nullptr, batch, {k.slice()}, head_dim, kc);
  vk::ops::write_kv(rec, pl, nullptr, batch, {v.slice()}, head_dim, vc);
  rec.barrier();
  vk::ops::AttentionArgs a;
  a.q = {q.slice()};
  a.k_cache = kc;
  a.v_cache = vc;
  a.batch = batch;
  a.max_q_len = max_q_len;
  a.out = {out.slice()};
  a.n_q_heads = n_head;
  a.head_dim = head_dim;
  a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  a.causal = false;
  vk::ops::attention(rec, pl, a);
  rec.barrier();
}

VulkanImageEncoder::VulkanImageEncoder(vk::Context& ctx, gguf::GgufFile projector)
    : file_(std::move(projector)),
      spec_(read_vision_spec(file_)),
      impl_(std::make_unique<Impl>(ctx)) {
  if (spec_.projector == ProjectorType::Gemma4v) {
    gemma4v_ = std::make_unique<Gemma4vVulkanTower>(ctx, spec_, read_gemma4v_weights(file_, spec_));
    return;
  }
  const VisionWeights w = read_vision_weights(file_, spec_);
  if (spec_.projector == ProjectorType::Pixtral) {
    load_pixtral(w);
    return;
  }
  if (spec_.qwen_vl()) {
    load_qwen25vl(w);
    return;
  }
  const VisionSpec& s = spec_;
  const uint32_t E = s.n_embd, F = s.n_ff, P = s.patch_size, N = s.n_patches();
  const uint32_t taps = 3 * P * P;
  if (taps % 4 != 0 || E % 4 != 0 || F % 4 != 0 || s.head_dim() % 4 != 0 || s.head_dim() > 256) {
    throw std::runtime_error("vision projector sizes the Vulkan kernels do not take (rows of " +
                             std::to_string(taps) + ", " + std::to_string(E) + ", " +
                             std::to_string(F) + ", heads of " + std::to_string(s.head_dim()) +
                             ")");
  }
  Impl& m = *impl_;
  // Window order: window (oy, ox) row-major, then its patches row-major.
  const uint32_t side = s.patches_per_side(), k = s.n_merge, out_side = side / k;
  m.order.reserve(N);
  for (uint32_t oy = 0; oy < out_side; ++oy)
    for (uint32_t ox = 0; ox < out_side; ++ox)
      for (uint32_t dy = 0; dy < k; ++dy)
        for (uint32_t dx = 0; dx < k; ++dx) m.order.push_back((oy * k + dy) * side + ox * k + dx);

  m.patch = upload_matrix(ctx, w.patch_w, taps);
  m.patch_b = upload_floats(ctx, tensor_to_f32(w.patch_b), "patch bias");
  const std::vector<float> pos = tensor_to_f32(w.position);
  std::vector<float> pos_ordered(pos.size());
  for (uint32_t i = 0; i < N; ++i)
    std::copy_n(&pos[size_t{m.order[i]} * E], E, &pos_ordered[size_t{i} * E]);
  m.position = upload_floats(ctx, pos_ordered, "positions");
  for (const VitLayerWeights& L : w.layers) {
    DeviceLayer d;
    d.ln1_w = upload_floats(ctx, tensor_to_f32(L.ln1_w), L.ln1_w.name);
    d.ln1_b = upload_floats(ctx, tensor_to_f32(L.ln1_b), L.ln1_b.name);
    d.ln2_w = upload_floats(ctx, tensor_to_f32(L.ln2_w), L.ln2_w.name);
    d.ln2_b = upload_floats(ctx, tensor_to_f32(L.ln2_b), L.ln2_b.name);
    d.q = upload_matrix(ctx, L.q_w, E),
    d.q_b = upload_floats(ctx, tensor_to_f32(L.q_b), L.q_b.name);
    d.k = upload_matrix(ctx, L.k_w, E),
    d.k_b = upload_floats(ctx, tensor_to_f32(L.k_b), L.k_b.name);
    d.v = upload_matrix(ctx, L.v_w, E),
    d.v_b = upload_floats(ctx, tensor_to_f32(L.v_b), L.v_b.name);
    d.o = upload_matrix(ctx, L.o_w, E),
    d.o_b = upload_floats(ctx, tensor_to_f32(L.o_b), L.o_b.name);
    d.up = upload_matrix(ctx, L.up_w, E);
    d.up_b = upload_floats(ctx, tensor_to_f32(L.up_b), L.up_b.name);
    d.down = upload_matrix(ctx, L.down_w, F);
    d.down_b = upload_floats(ctx, tensor_to_f32(L.down_b), L.down_b.name);
    m.layers.push_back(std::move(d));
  }
  m.post_ln_w = upload_floats(ctx, tensor_to_f32(w.post_ln_w), "post_ln weight");
  m.post_ln_b = upload_floats(ctx, tensor_to_f32(w.post_ln_b), "post_ln bias");
  m.soft_norm_w = upload_floats(ctx, tensor_to_f32(w.soft_emb_norm_w), "soft_emb_norm");
  // One row per output (the file's matrix transposed), F32.
  const std::vector<float> proj = tensor_to_f32(w.input_proj_w);
  const uint32_t T = s.text_embd;
  std::vector<float> proj_t(size_t{T} * E);
  for (uint32_t i = 0; i < E; ++i)
    for (uint32_t j = 0; j < T; ++j) proj_t[size_t{j} * E + i] = proj[size_t{i} * T + j];
  m.projection = upload_matrix(
      ctx, gguf::TensorType::F32,
      std::span(reinterpret_cast<const uint8_t*>(proj_t.data()), proj_t.size() * sizeof(float)), E,
      T, "input projection");

  // Activations, and a private K/V region: one sequence of N tokens over ceil(N / 16) blocks.
  const uint32_t n_out = s.n_output_tokens(), bs = kv::kDefaultBlockSize;
  const uint32_t n_blocks = (N + bs - 1) / bs;
  auto act = [&](uint64_t floats, const char* name) {
    return vk::Buffer(ctx.device(), floats * sizeof(float), vk::MemoryKind::DeviceLocal, name);
  };
  m.cols = act(uint64_t{N} * taps, "patch rows");
  m.x = act(uint64_t{N} * E, "x");
  m.h = act(uint64_t{N} * E, "h");
  m.q = act(uint64_t{N} * E, "q");
  m.k = act(uint64_t{N} * E, "k");
  m.v = act(uint64_t{N} * E, "v");
  m.att = act(uint64_t{N} * E, "attention out");
  m.ff = act(uint64_t{N} * F, "ffn");
  m.pooled = act(uint64_t{n_out} * E, "pooled");
  m.out = act(uint64_t{n_out} * T, "image embeddings");
  const uint64_t region = uint64_t{n_blocks} * s.n_head * bs * s.head_dim() * 2;
  m.k_cache = vk::Buffer(ctx.device(), region, vk::MemoryKind::DeviceLocal, "vision K");
  m.v_cache = vk::Buffer(ctx.device(), region, vk::MemoryKind::DeviceLocal, "vision V");
  std::vector<uint32_t> table(n_blocks);
  for (uint32_t b = 0; b < n_blocks; ++b) table[b] = b;
  const kv::BatchSequence one{table, N, N};
  m.attn_batch = kv::build_batch_meta({&one, 1}, bs);
  // Pooling: every window a sequence of n_merge^2 tokens (their block tables unused).
  const std::vector<uint32_t> pool_table(1, 0);
  std::vector<kv::BatchSequence> windows(n_out, kv::BatchSequence{pool_table, k * k, k * k});
  m.pool_batch = kv::build_batch_meta(windows, k * k);
  auto upload_words = [&](const std::vector<uint32_t>& words, const char* name) {
    vk::Buffer b(ctx.device(), words.size() * 4, vk::MemoryKind::DeviceLocal, name);
    vk::upload(ctx.device(), b.slice(), std::span<const uint32_t>(words));
    return b;
  };
  m.attn_meta = upload_words(m.attn_batch.words, "vision attention batch");
  m.pool_meta = upload_words(m.pool_batch.words, "vision pooling batch");
}

VulkanImageEncoder::~VulkanImageEncoder() = default;

ImageEmbeddings VulkanImageEncoder::encode(const image::Image& img) {
  return encode_pixels(tower_input(spec_, img));
}

ImageEmbeddings VulkanImageEncoder::encode_pixels(const TowerPixels& pixels) {
  check_tower_pixels(spec_, pixels);
  if (gemma4v_) return gemma4v_->encode(pixels);
  if (spec_.projector == ProjectorType::Pixtral) return encode_pixtral(pixels);
  if (spec_.qwen_vl()) return encode_qwen25vl(pixels);
  const VisionSpec& s = spec_;
  Impl& m = *impl_;
  const std::vector<float>& planes = pixels.planes;
  vk::Context& ctx = m.ctx;
  vk::PipelineCache& pl = ctx.pipelines();
  const uint32_t S = s.image_size, P = s.patch_size, side = s.patches_per_side();
  const uint32_t N = s.n_patches(), E = s.n_embd, F = s.n_ff, T = s.text_embd;
  const uint32_t n_out = s.n_output_tokens(), d = s.head_dim(), taps = 3 * P * P;
  // Patch rows on the host (the input is made there anyway), in window order.
  std::vector<float> cols(size_t{N} * taps);
  for (uint32_t i = 0; i < N; ++i) {
    const uint32_t py = m.order[i] / side, px = m.order[i] % side;
    float* row = &cols[size_t{i} * taps];
    for (uint32_t c = 0; c < 3; ++c)
      for (uint32_t ky = 0; ky < P; ++ky)
        std::copy_n(&planes[(size_t{c} * S + py * P + ky) * S + px * P], P,
                    row + (size_t{c} * P + ky) * P);
  }
  vk::upload(ctx.device(), m.cols.slice(), std::span<const float>(cols));

  const vk::ops::BatchInfo attn_batch{m.attn_meta.slice(), N, 1};
  const vk::ops::BatchInfo pool_batch{m.pool_meta.slice(), N, n_out};
  const vk::ops::CacheRegion kc{m.k_cache.slice(), s.n_head, kv::kDefaultBlockSize,
                                kv::CacheType::F16};
  const vk::ops::CacheRegion vc{m.v_cache.slice(), s.n_head, kv::kDefaultBlockSize,
                                kv::CacheType::F16};
  const uint64_t NE = uint64_t{N} * E;
  vk::CommandRecorder rec(ctx.device());
  rec.begin();
  m.product(rec, m.patch, m.cols.slice(), N, m.x.slice());
  rec.barrier();
  vk::ops::add_bias(rec, pl, m.x.slice(), m.patch_b.slice(), E, N);
  rec.barrier();
  vk::ops::add(rec, pl, m.x.slice(), m.position.slice(), m.x.slice(), static_cast<uint32_t>(NE));
  rec.barrier();
  for (const DeviceLayer& L : m.layers) {
    vk::ops::layer_norm(rec, pl,
                        {m.x.slice(), L.ln1_w.slice(), L.ln1_b.slice(), m.h.slice(), E, N, s.eps});
    rec.barrier();
    m.product(rec, L.q, m.h.slice(), N, m.q.slice());
    m.product(rec, L.k, m.h.slice(), N, m.k.slice());
    m.product(rec, L.v, m.h.slice(), N, m.v.slice());
    rec.barrier();
    vk::ops::add_bias(rec, pl, m.q.slice(), L.q_b.slice(), E, N);
    vk::ops::add_bias(rec, pl, m.k.slice(), L.k_b.slice(), E, N);
    vk::ops::add_bias(rec, pl, m.v.slice(), L.v_b.slice(), E, N);
    rec.barrier();
    tower_attention(rec, pl, attn_batch, kc, vc, m.q, m.k, m.v, m.att, N, s.n_head, d);
    m.product(rec, L.o, m.att.slice(), N, m.x.slice(), true);  // the residual add, fused
    rec.barrier();
    vk::ops::add_bias(rec, pl, m.x.slice(), L.o_b.slice(), E, N);
    rec.barrier();
    vk::ops::layer_norm(rec, pl,
                        {m.x.slice(), L.ln2_w.slice(), L.ln2_b.slice(), m.h.slice(), E, N, s.eps});
    rec.barrier();
    m.product(rec, L.up, m.h.slice(), N, m.ff.slice());
    rec.barrier();
    vk::ops::add_bias(rec, pl, m.ff.slice(), L.up_b.slice(), F, N);
    rec.barrier();
    vk::ops::gelu(rec, pl, m.ff.slice(), m.ff.slice(), static_cast<uint32_t>(uint64_t{N} * F));
    rec.barrier();
    m.product(rec, L.down, m.ff.slice(), N, m.x.slice(), true);
    rec.barrier();
    vk::ops::add_bias(rec, pl, m.x.slice(), L.down_b.slice(), E, N);
    rec.barrier();
  }
  vk::ops::layer_norm(
      rec, pl, {m.x.slice(), m.post_ln_w.slice(), m.post_ln_b.slice(), m.x.slice(), E, N, s.eps});
  rec.barrier();
  vk::ops::pool_rows(rec, pl, vk::ops::PoolMode::Mean, pool_batch, m.x.slice(), E,
                     m.pooled.slice());
  rec.barrier();
  vk::ops::RmsNormArgs norm;
  norm.x = m.pooled.slice();
  norm.weight = m.soft_norm_w.slice();
  norm.y = m.pooled.slice();
  norm.n = E;
  norm.n_rows = n_out;
  norm.eps = s.eps;
  vk::ops::rms_norm(rec, pl, norm);
  rec.barrier();
  m.product(rec, m.projection, m.pooled.slice(), n_out, m.out.slice());
  rec.submit_and_wait();

  ImageEmbeddings out;
  out.n_tokens = n_out;
  out.n_embd = T;
  out.data = vk::download<float>(ctx.device(), m.out.slice(), size_t{n_out} * T);
  return out;
}

void VulkanImageEncoder::load_pixtral(const VisionWeights& w) {
  const VisionSpec& s = spec_;
  const uint32_t E = s.n_embd, F = s.n_ff, P = s.patch_size, M = s.n_merge, T = s.text_embd;
  if (E % 4 != 0 || F % 4 != 0 || T % 4 != 0 || s.head_dim() > 256) {
    throw std::runtime_error("vision projector sizes the Vulkan kernels do not take (" +
                             std::to_string(E) + ", " + std::to_string(F) + ", heads of " +
                             std::to_string(s.head_dim()) + ")");
  }
  vk::Context& ctx = impl_->ctx;
  auto px = std::make_unique<DynamicTower>();
  px->patch = upload_matrix(ctx, w.patch_w, 3 * P * P);
  px->patch_b = upload_vector(ctx, w.patch_b);
  px->pre_ln_w = upload_vector(ctx, w.pre_ln_w);
  for (const VitLayerWeights& L : w.layers) {
    DeviceLayer d;
    d.ln1_w = upload_vector(ctx, L.ln1_w);
    d.ln2_w = upload_vector(ctx, L.ln2_w);
    d.q = upload_matrix(ctx, L.q_w, E), d.q_b = upload_vector(ctx, L.q_b);
    d.k = upload_matrix(ctx, L.k_w, E), d.k_b = upload_vector(ctx, L.k_b);
    d.v = upload_matrix(ctx, L.v_w, E), d.v_b = upload_vector(ctx, L.v_b);
    d.o = upload_matrix(ctx, L.o_w, E), d.o_b = upload_vector(ctx, L.o_b);
    d.gate = upload_matrix(ctx, L.gate_w, E);
    d.up = upload_matrix(ctx, L.up_w, E);
    d.down = upload_matrix(ctx, L.down_w, F);
    px->layers.push_back(std::move(d));
  }
  px->post_ln_w = upload_vector(ctx, w.post_ln_w);
  if (M > 1) {
    px->input_norm_w = upload_vector(ctx, w.input_norm_w);
    // The merger reads its window's M^2 rows back to back (window order): its columns, the
    // file's (channel, row, column), go to (row, column, channel). F32 on the device.
    const std::vector<float> merger = tensor_to_f32(w.merger_w);
    const uint32_t K = E * M * M;
    std::vector<float> permuted(merger.size());
    for (uint32_t o = 0; o < E; ++o)
      for (uint32_t c = 0; c < E; ++c)
        for (uint32_t k = 0; k < M * M; ++k)
          permuted[size_t{o} * K + size_t{k} * E + c] =
              merger[size_t{o} * K + size_t{c} * M * M + k];
    px->merger = upload_matrix(ctx, gguf::TensorType::F32,
                               std::span(reinterpret_cast<const uint8_t*>(permuted.data()),
                                         permuted.size() * sizeof(float)),
                               K, E, "patch merger");
  }
  px->mm1 = upload_matrix(ctx, w.mm1_w, E);
  px->mm1_b = upload_vector(ctx, w.mm1_b);
  px->mm2 = upload_matrix(ctx, w.mm2_w, T);
  px->mm2_b = upload_vector(ctx, w.mm2_b);
  px->img_break = tensor_to_f32(w.img_break);
  impl_->dynamic = std::move(px);
}

ImageEmbeddings VulkanImageEncoder::encode_pixtral(const TowerPixels& pixels) {
  const VisionSpec& s = spec_;
  Impl& m = *impl_;
  DynamicTower& px = *m.dynamic;
  vk::Context& ctx = m.ctx;
  vk::PipelineCache& pl = ctx.pipelines();
  const uint32_t P = s.patch_size, M = s.n_merge, E = s.n_embd, F = s.n_ff, T = s.text_embd;
  const uint32_t d = s.head_dim(), taps = 3 * P * P, bs = kv::kDefaultBlockSize;
  const uint32_t grid_w = pixels.width / P, grid_h = pixels.height / P, N = grid_w * grid_h;
  const uint32_t out_w = grid_w / M, out_h = grid_h / M, n_merged = out_w * out_h;
  const uint32_t n_blocks = (N + bs - 1) / bs;
  if (N > px.capacity) {  // buffers for this many patches (kept for the next images)
    auto act = [&](uint64_t floats, const char* name) {
      return vk::Buffer(ctx.device(), floats * sizeof(float), vk::MemoryKind::DeviceLocal, name);
    };
    px.cols = act(uint64_t{N} * taps, "patch rows");
    px.x = act(uint64_t{N} * E, "x");
    px.h = act(uint64_t{N} * E, "h");
    px.q = act(uint64_t{N} * E, "q");
    px.k = act(uint64_t{N} * E, "k");
    px.v = act(uint64_t{N} * E, "v");
    px.att = act(uint64_t{N} * E, "attention out");
    px.gate = act(uint64_t{N} * F, "ffn gate");
    px.up = act(uint64_t{N} * F, "ffn up");
    px.hidden = act(uint64_t{N} * T, "projector hidden");
    px.out = act(uint64_t{N} * T, "image embeddings");
    const uint64_t region = uint64_t{n_blocks} * s.n_head * bs * d * 2;
    px.k_cache = vk::Buffer(ctx.device(), region, vk::MemoryKind::DeviceLocal, "vision K");
    px.v_cache = vk::Buffer(ctx.device(), region, vk::MemoryKind::DeviceLocal, "vision V");
    px.pos = vk::Buffer(ctx.device(), uint64_t{N} * 8, vk::MemoryKind::DeviceLocal, "positions");
    px.capacity = N;
  }
  // Patches in window order, each with its grid (row, column) for the RoPE.
  const std::vector<uint32_t> order = window_order(grid_w, grid_h, M);
  std::vector<uint32_t> positions(size_t{N} * 2);
  for (uint32_t i = 0; i < N; ++i) {
    positions[2 * i] = order[i] / grid_w;
    positions[2 * i + 1] = order[i] % grid_w;
  }
  vk::upload(ctx.device(), px.pos.slice(), std::span<const uint32_t>(positions));
  vk::upload(ctx.device(), px.cols.slice(), std::span<const float>(patch_rows(pixels, P, order)));
  std::vector<uint32_t> table(n_blocks);
  for (uint32_t b = 0; b < n_blocks; ++b) table[b] = b;
  const kv::BatchSequence one{table, N, N};
  const kv::BatchMeta meta = kv::build_batch_meta({&one, 1}, bs);
  if (px.meta.size() < meta.words.size() * 4)
    px.meta = vk::Buffer(ctx.device(), meta.words.size() * 4, vk::MemoryKind::DeviceLocal,
                         "vision attention batch");
  vk::upload(ctx.device(), px.meta.slice(), std::span<const uint32_t>(meta.words));

  const vk::ops::BatchInfo batch{px.meta.slice(), N, 1};
  const vk::ops::CacheRegion kc{px.k_cache.slice(), s.n_head, bs, kv::CacheType::F16};
  const vk::ops::CacheRegion vc{px.v_cache.slice(), s.n_head, bs, kv::CacheType::F16};
  auto rms = [&](vk::CommandRecorder& rec, const vk::Buffer& x, const vk::Buffer& w,
                 const vk::Buffer& y,
                 uint32_t n_rows) { tower_rms_norm(rec, pl, x, w, y, E, n_rows, s.eps); };
  auto bias = [&](vk::CommandRecorder& rec, const vk::Buffer& x, const vk::Buffer& b, uint32_t n,
                  uint32_t n_rows) {
    if (!b.slice()) return;
    tower_add_bias(rec, pl, x, b, n, n_rows);
    rec.barrier();
  };
  vk::CommandRecorder rec(ctx.device());
  rec.begin();
  m.product(rec, px.patch, px.cols.slice(), N, px.x.slice());
  rec.barrier();
  bias(rec, px.x, px.patch_b, E, N);
  if (px.pre_ln_w.slice()) rms(rec, px.x, px.pre_ln_w, px.x, N);
  for (const DeviceLayer& L : px.layers)
    m.dynamic_layer(rec, s, px, L, N, batch, N, kc, vc, /*rope_halves=*/false);
  if (px.post_ln_w.slice()) rms(rec, px.x, px.post_ln_w, px.x, N);
  // The merger: RMS norm, then each window's M^2 consecutive rows as one input row.
  const vk::Buffer* merged = &px.x;
  if (M > 1) {
    rms(rec, px.x, px.input_norm_w, px.x, N);
    m.product(rec, px.merger, px.x.slice(), n_merged, px.h.slice());
    rec.barrier();
    merged = &px.h;
  }
  m.product(rec, px.mm1, merged->slice(), n_merged, px.hidden.slice());
  rec.barrier();
  bias(rec, px.hidden, px.mm1_b, T, n_merged);
  vk::ops::gelu(rec, pl, px.hidden.slice(), px.hidden.slice(), n_merged * T);
  rec.barrier();
  m.product(rec, px.mm2, px.hidden.slice(), n_merged, px.out.slice());
  rec.barrier();
  bias(rec, px.out, px.mm2_b, T, n_merged);
  rec.submit_and_wait();

  const std::vector<float> rows =
      vk::download<float>(ctx.device(), px.out.slice(), size_t{n_merged} * T);
  // (Window order is row-major over windows: the merged patches come out in grid rows.)
  return pixtral_rows_with_breaks(rows, out_w, out_h, px.img_break);
}

}  // namespace vkllm::vision
