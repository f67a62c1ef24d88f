// Gemma 4's tower and projector on the Vulkan device (gemma4_vision.h Gemma4vVulkanTower): the
// CPU tower's graph (gemma4_vision.cpp) as one submission of the engine's kernels.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/gguf/quants.h"
#include "engine/kv/kv_layout.h"
#include "engine/vision/gemma4_vision.h"
#include "engine/vision/image_preprocess.h"
#include "engine/vision/vulkan_encoder_parts.h"
#include "engine/vulkan/context.h"
#include "engine/vulkan/matmul_ops.h"
#include "engine/vulkan/ops.h"

namespace vkllm::vision {

// A linear layer on the device with its clamp bounds.
struct Gemma4vDeviceLinear {
  DeviceMatrix w;
  Gemma4vClamp clamp;
};

struct Gemma4vDeviceLayer {
  vk::Buffer ln1, q_norm, k_norm, attn_post_norm, ln2, ffn_post_norm;
  float out_scale = 1.0f;
  Gemma4vDeviceLinear q, k, v, o, gate, up, down;
};

struct Gemma4vVulkanTower::State {
  State(vk::Context& c, const VisionSpec& sp) : ctx(c), spec(sp), matmul(c.pipelines()) {}
  vk::Context& ctx;
  const VisionSpec& spec;
  vk::MatmulKernels matmul;
  Gemma4vDeviceLinear patch;    // no clamps
  std::vector<float> position;  // the two tables, on the host: each image's rows are made there
  std::vector<Gemma4vDeviceLayer> layers;
  std::vector<float> std_bias, std_scale;
  Gemma4vDeviceLinear proj;
  // Per-image buffers, grown to the largest image seen.
  uint32_t capacity = 0, out_capacity = 0, cache_blocks = 0;
  vk::Buffer cols, pos_rows, pos, x, h, q, k, v, att, gate, up, clamped, meta, pool_meta, k_cache,
      v_cache, pooled, std_bias_rows, std_scale_rows, out;

  // y = clamp_out(W clamp_in(x)) over n rows (barriers after each step).
  void linear(vk::CommandRecorder& rec, const Gemma4vDeviceLinear& l, const vk::Buffer& x_in,
              uint32_t n, const vk::Buffer& y) {
    vk::PipelineCache& pl = ctx.pipelines();
    vk::BufferSlice src = x_in.slice();
    if (l.clamp.clamps_input()) {
      vk::ops::clamp(rec, pl, src, clamped.slice(), n * l.w.cols, l.clamp.in_min, l.clamp.in_max);
      rec.barrier();
      src = clamped.slice();
    }
    vk::MatmulArgs a;
    a.type = l.w.type;
    a.weights = l.w.buffer.slice();
    a.x = src;
    a.y = y.slice();
    a.rows = l.w.rows;
    a.cols = l.w.cols;
    a.batch = n;
    matmul.record(rec, a);
    rec.barrier();
    if (l.clamp.clamps_output()) {
      vk::ops::clamp(rec, pl, y.slice(), y.slice(), n * l.w.rows, l.clamp.out_min, l.clamp.out_max);
      rec.barrier();
    }
  }
};

namespace {

// Gemma 4's head dimension g as the Qwen2.5-VL RoPE mode turns it: the second and third
// quarters of the head swapped (gemma4_vision.h).
uint32_t g4v_rope_dim(uint32_t g, uint32_t d) {
  const uint32_t q = d / 4;
  return g < q || g >= 3 * q ? g : g < 2 * q ? g + q : g - q;
}

// Q or K's matrix with its output rows permuted head by head as g4v_rope_dim says.
DeviceMatrix g4v_permuted_matrix(vk::Context& ctx, const TensorRef& t, uint32_t cols,
                                 uint32_t n_head, uint32_t d) {
  const size_t row = gguf::quantized_size(t.type, cols);
  std::vector<uint8_t> bytes(t.bytes.size());
  for (uint32_t h = 0; h < n_head; ++h)
    for (uint32_t g = 0; g < d; ++g)
      std::memcpy(&bytes[(size_t{h} * d + g4v_rope_dim(g, d)) * row],
                  &t.bytes[(size_t{h} * d + g) * row], row);
  return upload_matrix(ctx, t.type, bytes, cols, n_head * d, t.name);
}

std::vector<float> g4v_permuted_norm(const TensorRef& t, uint32_t d, float scale) {
  const std::vector<float> w = tensor_to_f32(t);
  std::vector<float> out(d);
  for (uint32_t g = 0; g < d; ++g) out[g4v_rope_dim(g, d)] = w[g] * scale;
  return out;
}

}  // namespace

Gemma4vVulkanTower::Gemma4vVulkanTower(vk::Context& ctx, const VisionSpec& s,
                                       const Gemma4vWeights& w)
    : s_(std::make_unique<State>(ctx, s)) {
  const uint32_t E = s.n_embd, F = s.n_ff, P = s.patch_size, T = s.text_embd, d = s.head_dim();
  if (E % 4 != 0 || F % 4 != 0 || T % 4 != 0 || d > 256) {
    throw std::runtime_error("vision projector sizes the Vulkan kernels do not take (" +
                             std::to_string(E) + ", " + std::to_string(F) + ", heads of " +
                             std::to_string(d) + ")");
  }
  State& m = *s_;
  auto linear = [&](const Gemma4vLinear& l, uint32_t cols) {
    return Gemma4vDeviceLinear{upload_matrix(ctx, l.w, cols), l.clamp};
  };
  m.patch.w = upload_matrix(ctx, w.patch, 3 * P * P);
  m.position = tensor_to_f32(w.position);
  const float sqrt_d = std::sqrt(static_cast<float>(d));
  for (const Gemma4vLayer& L : w.layers) {
    Gemma4vDeviceLayer g;
    g.ln1 = upload_vector(ctx, L.ln1);
    g.q_norm = upload_floats(ctx, g4v_permuted_norm(L.q_norm, d, sqrt_d), L.q_norm.name);
    g.k_norm = upload_floats(ctx, g4v_permuted_norm(L.k_norm, d, 1.0f), L.k_norm.name);
    g.attn_post_norm = upload_vector(ctx, L.attn_post_norm);
    g.ln2 = upload_vector(ctx, L.ln2);
    g.ffn_post_norm = upload_vector(ctx, L.ffn_post_norm);
    if (!L.out_scale.bytes.empty()) g.out_scale = tensor_to_f32(L.out_scale)[0];
    g.q = {g4v_permuted_matrix(ctx, L.q.w, E, s.n_head, d), L.q.clamp};
    g.k = {g4v_permuted_matrix(ctx, L.k.w, E, s.n_head, d), L.k.clamp};
    g.v = linear(L.v, E), g.o = linear(L.o, E);
    g.gate = linear(L.gate, E), g.up = linear(L.up, E), g.down = linear(L.down, F);
    m.layers.push_back(std::move(g));
  }
  m.std_bias = tensor_to_f32(w.std_bias);
  m.std_scale = tensor_to_f32(w.std_scale);
  m.proj = linear(w.proj, E);
}

Gemma4vVulkanTower::~Gemma4vVulkanTower() = default;

ImageEmbeddings Gemma4vVulkanTower::encode(const TowerPixels& pixels) {
  State& m = *s_;
  const VisionSpec& s = m.spec;
  vk::Context& ctx = m.ctx;
  vk::PipelineCache& pl = ctx.pipelines();
  const uint32_t P = s.patch_size, M = s.n_merge, E = s.n_embd, F = s.n_ff, T = s.text_embd;
  const uint32_t d = s.head_dim(), H = s.n_head, taps = 3 * P * P, bs = kv::kDefaultBlockSize;
  const uint32_t grid_w = pixels.width / P, grid_h = pixels.height / P, N = grid_w * grid_h;
  const uint32_t out_w = grid_w / M, out_h = grid_h / M, n_out = out_w * out_h;
  if (grid_w > s.n_positions || grid_h > s.n_positions) {
    throw std::invalid_argument("image encoder: a " + std::to_string(grid_w) + " x " +
                                std::to_string(grid_h) +
                                " patch grid is beyond the tower's learned positions (" +
                                std::to_string(s.n_positions) + ")");
  }
  // Pooling-window order: cell (oy, ox) row-major, then its patches row-major.
  std::vector<uint32_t> order;
  order.reserve(N);
  for (uint32_t oy = 0; oy < out_h; ++oy)
    for (uint32_t ox = 0; ox < out_w; ++ox)
      for (uint32_t dy = 0; dy < M; ++dy)
        for (uint32_t dx = 0; dx < M; ++dx) order.push_back((oy * M + dy) * grid_w + ox * M + dx);
  TowerPixels scaled = pixels;
  for (float& v : scaled.planes) v = 2.0f * v - 1.0f;
  // Each row's learned position (its column's row of the first table plus its row's of the
  // second) and its (column, row) for the RoPE kernel.
  std::vector<float> pos_rows(size_t{N} * E);
  std::vector<uint32_t> pos(2 * size_t{N});
  const float* tbl_x = m.position.data();
  const float* tbl_y = tbl_x + size_t{s.n_positions} * E;
  for (uint32_t i = 0; i < N; ++i) {
    const uint32_t col = order[i] % grid_w, row = order[i] / grid_w;
    for (uint32_t e = 0; e < E; ++e)
      pos_rows[size_t{i} * E + e] = tbl_x[size_t{col} * E + e] + tbl_y[size_t{row} * E + e];
    pos[2 * i] = col;
    pos[2 * i + 1] = row;
  }

  auto act = [&](uint64_t floats, const char* name) {
    return vk::Buffer(ctx.device(), floats * sizeof(float), vk::MemoryKind::DeviceLocal, name);
  };
  const uint32_t n_blocks = (N + bs - 1) / bs;
  if (N > m.capacity) {
    m.cols = act(uint64_t{N} * taps, "patch rows");
    m.pos_rows = act(uint64_t{N} * E, "positions");
    m.pos = vk::Buffer(ctx.device(), uint64_t{N} * 8, vk::MemoryKind::DeviceLocal, "grid");
    m.x = act(uint64_t{N} * E, "x");
    m.h = act(uint64_t{N} * E, "h");
    m.q = act(uint64_t{N} * E, "q");
    m.k = act(uint64_t{N} * E, "k");
    m.v = act(uint64_t{N} * E, "v");
    m.att = act(uint64_t{N} * E, "attention out");
    m.gate = act(uint64_t{N} * F, "ffn gate");
    m.up = act(uint64_t{N} * F, "ffn up");
    m.clamped = act(uint64_t{N} * std::max(E, F), "clamped input");
    m.capacity = N;
  }
  if (n_out > m.out_capacity) {
    m.pooled = act(uint64_t{n_out} * E, "pooled");
    m.out = act(uint64_t{n_out} * T, "image embeddings");
    std::vector<float> bias_rows, scale_rows;
    for (uint32_t r = 0; r < n_out; ++r) {
      bias_rows.insert(bias_rows.end(), m.std_bias.begin(), m.std_bias.end());
      scale_rows.insert(scale_rows.end(), m.std_scale.begin(), m.std_scale.end());
    }
    for (float& b : bias_rows) b = -b;
    m.std_bias_rows = upload_floats(ctx, bias_rows, "std bias");
    m.std_scale_rows = upload_floats(ctx, scale_rows, "std scale");
    m.out_capacity = n_out;
  }
  if (n_blocks > m.cache_blocks) {
    const uint64_t region = uint64_t{n_blocks} * H * bs * d * 2;
    m.k_cache = vk::Buffer(ctx.device(), region, vk::MemoryKind::DeviceLocal, "vision K");
    m.v_cache = vk::Buffer(ctx.device(), region, vk::MemoryKind::DeviceLocal, "vision V");
    m.cache_blocks = n_blocks;
  }
  // The image as one sequence over the K/V region; for the pooling, every cell a sequence.
  std::vector<uint32_t> table(n_blocks);
  for (uint32_t b = 0; b < n_blocks; ++b) table[b] = b;
  const kv::BatchSequence one{table, N, N};
  const kv::BatchMeta attn_batch = kv::build_batch_meta({&one, 1}, bs);
  const std::vector<uint32_t> pool_table(1, 0);
  const std::vector<kv::BatchSequence> cells(n_out, kv::BatchSequence{pool_table, M * M, M * M});
  const kv::BatchMeta pool_batch = kv::build_batch_meta(cells, M * M);
  auto upload_meta = [&](vk::Buffer& b, const kv::BatchMeta& meta, const char* name) {
    if (b.size() < meta.words.size() * 4)
      b = vk::Buffer(ctx.device(), meta.words.size() * 4, vk::MemoryKind::DeviceLocal, name);
    vk::upload(ctx.device(), b.slice(), std::span<const uint32_t>(meta.words));
  };
  upload_meta(m.meta, attn_batch, "vision attention batch");
  upload_meta(m.pool_meta, pool_batch, "vision pooling batch");
  vk::upload(ctx.device(), m.cols.slice(), std::span<const float>(patch_rows(scaled, P, order)));
  vk::upload(ctx.device(), m.pos_rows.slice(), std::span<const float>(pos_rows));
  vk::upload(ctx.device(), m.pos.slice(), std::span<const uint32_t>(pos));

  const vk::ops::BatchInfo attn{m.meta.slice(), N, 1};
  const vk::ops::BatchInfo pooling{m.pool_meta.slice(), N, n_out};
  const vk::ops::CacheRegion kc{m.k_cache.slice(), H, bs, kv::CacheType::F16};
  const vk::ops::CacheRegion vc{m.v_cache.slice(), H, bs, kv::CacheType::F16};
  const vk::Buffer none;
  auto rms = [&](vk::CommandRecorder& rec, const vk::Buffer& x, const vk::Buffer& w,
                 const vk::Buffer& y, uint32_t n,
                 uint32_t rows) { tower_rms_norm(rec, pl, x, w, y, n, rows, s.eps); };
  auto add_into_x = [&](vk::CommandRecorder& rec, const vk::Buffer& y) {
    vk::ops::add(rec, pl, m.x.slice(), y.slice(), m.x.slice(), N * E);
    rec.barrier();
  };
  vk::CommandRecorder rec(ctx.device());
  rec.begin();
  m.linear(rec, m.patch, m.cols, N, m.x);
  add_into_x(rec, m.pos_rows);
  for (const Gemma4vDeviceLayer& L : m.layers) {
    rms(rec, m.x, L.ln1, m.h, E, N);
    m.linear(rec, L.q, m.h, N, m.q);
    m.linear(rec, L.k, m.h, N, m.k);
    m.linear(rec, L.v, m.h, N, m.v);
    rms(rec, m.q, L.q_norm, m.q, d, N * H);
    rms(rec, m.k, L.k_norm, m.k, d, N * H);
    rms(rec, m.v, none, m.v, d, N * H);
    for (const vk::Buffer* qk : {&m.q, &m.k})
      vk::ops::rope_2d(rec, pl, {qk->slice(), m.pos.slice(), N, H, d, E, s.rope_theta, true});
    rec.barrier();
    tower_attention(rec, pl, attn, kc, vc, m.q, m.k, m.v, m.att, N, H, d);
    m.linear(rec, L.o, m.att, N, m.h);
    rms(rec, m.h, L.attn_post_norm, m.h, E, N);
    add_into_x(rec, m.h);
    rms(rec, m.x, L.ln2, m.h, E, N);
    m.linear(rec, L.gate, m.h, N, m.gate);
    m.linear(rec, L.up, m.h, N, m.up);
    vk::ops::GluArgs g;
    g.gate = m.gate.slice();
    g.up = m.up.slice();
    g.out = m.gate.slice();
    g.n = F;
    g.n_rows = N;
    g.act = vk::ops::GluActivation::GeluQuick;
    vk::ops::glu(rec, pl, g);
    rec.barrier();
    m.linear(rec, L.down, m.gate, N, m.h);
    rms(rec, m.h, L.ffn_post_norm, m.h, E, N);
    add_into_x(rec, m.h);
    if (L.out_scale != 1.0f) {
      vk::ops::scale(rec, pl, m.x.slice(), m.x.slice(), N * E, L.out_scale);
      rec.barrier();
    }
  }
  // The pooler (the mean of each cell times sqrt(n_embd)), the standardisation, the RMS norm and
  // the projection.
  vk::ops::pool_rows(rec, pl, vk::ops::PoolMode::Mean, pooling, m.x.slice(), E, m.pooled.slice());
  rec.barrier();
  vk::ops::scale(rec, pl, m.pooled.slice(), m.pooled.slice(), n_out * E,
                 std::sqrt(static_cast<float>(E)));
  rec.barrier();
  if (m.std_bias_rows.slice()) {
    vk::ops::add(rec, pl, m.pooled.slice(), m.std_bias_rows.slice(), m.pooled.slice(), n_out * E);
    rec.barrier();
  }
  if (m.std_scale_rows.slice()) {
    vk::ops::mul(rec, pl, m.pooled.slice(), m.std_scale_rows.slice(), m.pooled.slice(), n_out * E);
    rec.barrier();
  }
  rms(rec, m.pooled, none, m.pooled, E, n_out);
  m.linear(rec, m.proj, m.pooled, n_out, m.out);
  rec.submit_and_wait();

  ImageEmbeddings out;
  out.n_tokens = n_out;
  out.n_embd = T;
  out.data = vk::download<float>(ctx.device(), m.out.slice(), size_t{n_out} * T);
  return out;
}

}  // namespace vkllm::vision
