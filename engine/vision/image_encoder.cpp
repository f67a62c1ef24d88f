#include "engine/vision/image_encoder.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "engine/cpu/ops.h"
#include "engine/cpu/quant_matmul.h"
#include "engine/cpu/thread_pool.h"
#include "engine/vision/dense_attention.h"
#include "engine/vision/gemma4_vision.h"
#include "engine/vision/image_preprocess.h"
#include "engine/vision/projector_tensors.h"
#include "engine/vision/qwen_vl.h"
#include "engine/vision/rope_2d.h"

namespace vkllm::vision {

namespace {

// Runs fn(begin, end) over [0, n) in about pool.size() * 4 slices.
template <typename Fn>
void parallel_ranges(cpu::ThreadPool& pool, uint32_t n, uint32_t grain, const Fn& fn) {
  const uint32_t slices = std::max(1u, std::min(n / std::max(grain, 1u), pool.size() * 4));
  const uint32_t per = (n + slices - 1) / slices;
  pool.parallel_for(slices, [&](uint32_t s, unsigned) {
    const uint32_t b = s * per, e = std::min(n, b + per);
    if (b < e) fn(b, e);
  });
}

// A tower layer's unmasked attention over its N tokens, q, k, v and out rows n_embd wide, scaled
// by 1 / sqrt(head_dim): the same in every tower.
void cpu_tower_attention(const VisionSpec& s, const float* q, const float* k, const float* v,
                         float* out, uint32_t N, cpu::ThreadPool& pool, cpu::MatmulWorkspace& ws) {
  const DenseAttentionArgs a{
      q,        k, v,        s.n_embd,     out,
      s.n_embd, N, s.n_head, s.head_dim(), 1.0f / std::sqrt(static_cast<float>(s.head_dim()))};
  dense_attention(a, pool, ws);
}

}  // namespace

// A layer's weights as the CPU kernels read them. Outside the anonymous namespace: Impl, a
// member of an exported class, holds them.
struct CpuVitLayer {
  std::vector<float> ln1_w, ln1_b, ln2_w, ln2_b, q_b, k_b, v_b, o_b, up_b, down_b, gate_b;
  cpu::WeightView q, k, v, o, up, down, gate;  // gate: Pixtral's
};

// Qwen3-VL's deepstack merger after tower layer `layer`.
struct CpuDeepstack {
  uint32_t layer = 0;
  std::vector<float> norm_w, norm_b, fc1_b, fc2_b;
  cpu::WeightView fc1, fc2;
};

struct ImageEncoder::Impl {
  explicit Impl(unsigned threads) : pool(threads ? threads : cpu::ThreadPool::default_threads()) {}
  cpu::ThreadPool pool;
  cpu::MatmulWorkspace ws;
  cpu::WeightView patch;
  std::vector<float> patch_b, position, post_ln_w, post_ln_b, soft_norm_w;
  std::vector<CpuVitLayer> layers;
  std::vector<float> projection_t;  // [text_embd][n_embd]: the file's matrix transposed
  cpu::WeightView projection;
  // Pixtral: the RMS norms, the patch merger and the MLP, the [IMG_BREAK] row.
  std::vector<float> pre_ln_w, input_norm_w, mm1_b, mm2_b, img_break;
  cpu::WeightView merger, mm1, mm2;
  // Qwen2.5-VL, Qwen3-VL: the two frames' patch kernels summed (a still image is both frames);
  // Qwen3-VL's deepstack mergers.
  std::vector<float> patch_sum;
  std::vector<CpuDeepstack> deepstack;

  // y[t] = W x[t] (+ bias) for n rows.
  void linear(const cpu::WeightView& w, const std::vector<float>& bias, const float* x, uint32_t n,
              float* y) {
    linear(w, bias.empty() ? nullptr : bias.data(), x, n, y);
  }
  void linear(const cpu::WeightView& w, const float* bias, const float* x, uint32_t n, float* y) {
    const cpu::Product p{&w, y, w.rows, false};
    cpu::matmul({&p, 1}, x, w.cols, n, pool, ws);
    if (bias) {
      parallel_ranges(pool, n, 16, [&](uint32_t b, uint32_t e) {
        cpu::add_bias(y, bias, static_cast<uint32_t>(w.rows), 0, b, e);
      });
    }
  }
  void layer_norm(const float* x, const std::vector<float>& w, const std::vector<float>& b,
                  float eps, uint32_t n_rows, uint32_t n, float* y) {
    const cpu::LayerNormArgs a{x, w.data(), b.data(), y, n, eps};
    parallel_ranges(pool, n_rows, 16,
                    [&](uint32_t r0, uint32_t r1) { cpu::layer_norm(a, r0, r1); });
  }
  // y = x / rms(x) * w per row (w empty: no weight).
  void rms_norm(float* x, const std::vector<float>& w, float eps, uint32_t n_rows, uint32_t n,
                float* y) {
    const cpu::RmsNormArgs a{x, nullptr, w.empty() ? nullptr : w.data(), y, n, 0, 0, eps};
    parallel_ranges(pool, n_rows, 16, [&](uint32_t r0, uint32_t r1) { cpu::rms_norm(a, r0, r1); });
  }
  void add_into(float* x, const float* y, uint64_t n) {
    parallel_ranges(pool, static_cast<uint32_t>(n), 4096,
                    [&](uint32_t b, uint32_t e) { cpu::add(x, y, x, b, e); });
  }
};

ImageEncoder::ImageEncoder(const std::filesystem::path& projector, unsigned threads)
    : ImageEncoder(gguf::GgufFile::open(projector, gguf::ReadLayout::Raw), threads) {}

ImageEncoder::ImageEncoder(gguf::GgufFile projector, unsigned threads)
    : file_(std::move(projector)),
      spec_(read_vision_spec(file_)),
      impl_(std::make_unique<Impl>(threads)) {
  if (spec_.projector == ProjectorType::Gemma4v) {
    gemma4v_ = std::make_unique<Gemma4vCpuTower>(spec_, read_gemma4v_weights(file_, spec_),
                                                 impl_->pool, impl_->ws);
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
  const uint64_t E = spec_.n_embd, F = spec_.n_ff, P = spec_.patch_size;
  Impl& m = *impl_;
  m.patch = matrix_view(w.patch_w, 3 * P * P);
  m.patch_b = tensor_to_f32(w.patch_b);
  m.position = tensor_to_f32(w.position);
  for (const VitLayerWeights& L : w.layers) {
    CpuVitLayer p{};
    p.ln1_w = tensor_to_f32(L.ln1_w), p.ln1_b = tensor_to_f32(L.ln1_b);
    p.ln2_w = tensor_to_f32(L.ln2_w), p.ln2_b = tensor_to_f32(L.ln2_b);
    p.q = matrix_view(L.q_w, E), p.q_b = tensor_to_f32(L.q_b);
    p.k = matrix_view(L.k_w, E), p.k_b = tensor_to_f32(L.k_b);
    p.v = matrix_view(L.v_w, E), p.v_b = tensor_to_f32(L.v_b);
    p.o = matrix_view(L.o_w, E), p.o_b = tensor_to_f32(L.o_b);
    p.up = matrix_view(L.up_w, E), p.up_b = tensor_to_f32(L.up_b);
    p.down = matrix_view(L.down_w, F), p.down_b = tensor_to_f32(L.down_b);
    m.layers.push_back(std::move(p));
  }
  m.post_ln_w = tensor_to_f32(w.post_ln_w);
  m.post_ln_b = tensor_to_f32(w.post_ln_b);
  m.soft_norm_w = tensor_to_f32(w.soft_emb_norm_w);
  // The file stores the projection as n_embd rows of text_embd (ggml multiplies by its
  // transpose); the matmul wants one row per output, so it is transposed once here.
  const std::vector<float> proj = tensor_to_f32(w.input_proj_w);
  const uint64_t T = spec_.text_embd;
  m.projection_t.resize(T * E);
  for (uint64_t i = 0; i < E; ++i)
    for (uint64_t j = 0; j < T; ++j) m.projection_t[j * E + i] = proj[i * T + j];
  m.projection = {gguf::TensorType::F32, reinterpret_cast<const std::byte*>(m.projection_t.data()),
                  E, T};
}

ImageEncoder::~ImageEncoder() = default;

TowerPixels ImageEncoder::preprocess(const image::Image& img) const {
  return tower_input(spec_, img);
}

ImageEmbeddings ImageEncoder::encode(const image::Image& img) {
  return encode_pixels(preprocess(img));
}

ImageEmbeddings ImageEncoder::encode_pixels(const TowerPixels& pixels) {
  check_tower_pixels(spec_, pixels);
  if (gemma4v_) return gemma4v_->encode(pixels);
  if (spec_.projector == ProjectorType::Pixtral) return encode_pixtral(pixels);
  if (spec_.qwen_vl()) return encode_qwen25vl(pixels);
  const VisionSpec& s = spec_;
  Impl& m = *impl_;
  const std::vector<float>& planes = pixels.planes;
  const uint32_t S = s.image_size, P = s.patch_size, side = s.patches_per_side();
  const uint32_t N = s.n_patches(), E = s.n_embd, F = s.n_ff;
  // Patches as rows of 3 x P x P taps in the kernel's order (channel, row, column), so the
  // stride-P convolution is one matmul.
  const uint32_t taps = 3 * P * P;
  std::vector<float> cols(size_t{N} * taps);
  parallel_ranges(m.pool, N, 8, [&](uint32_t b, uint32_t e) {
    for (uint32_t p = b; p < e; ++p) {
      const uint32_t py = p / side, px = p % side;
      float* row = &cols[size_t{p} * taps];
      for (uint32_t c = 0; c < 3; ++c)
        for (uint32_t ky = 0; ky < P; ++ky)
          std::copy_n(&planes[(size_t{c} * S + py * P + ky) * S + px * P], P,
                      row + (size_t{c} * P + ky) * P);
    }
  });
  std::vector<float> x(size_t{N} * E), h(size_t{N} * E), q(size_t{N} * E), k(size_t{N} * E),
      v(size_t{N} * E), att(size_t{N} * E), ff(size_t{N} * F);
  m.linear(m.patch, m.patch_b.data(), cols.data(), N, x.data());
  m.add_into(x.data(), m.position.data(), x.size());

  for (const CpuVitLayer& L : m.layers) {
    m.layer_norm(x.data(), L.ln1_w, L.ln1_b, s.eps, N, E, h.data());
    const cpu::Product qkv[] = {
        {&L.q, q.data(), E, false}, {&L.k, k.data(), E, false}, {&L.v, v.data(), E, false}};
    cpu::matmul(qkv, h.data(), E, N, m.pool, m.ws);
    parallel_ranges(m.pool, N, 16, [&](uint32_t b, uint32_t e) {
      cpu::add_bias(q.data(), L.q_b.data(), E, 0, b, e);
      cpu::add_bias(k.data(), L.k_b.data(), E, 0, b, e);
      cpu::add_bias(v.data(), L.v_b.data(), E, 0, b, e);
    });
    cpu_tower_attention(s, q.data(), k.data(), v.data(), att.data(), N, m.pool, m.ws);
    m.linear(L.o, L.o_b.data(), att.data(), N, h.data());
    m.add_into(x.data(), h.data(), x.size());

    m.layer_norm(x.data(), L.ln2_w, L.ln2_b, s.eps, N, E, h.data());
    m.linear(L.up, L.up_b.data(), h.data(), N, ff.data());
    parallel_ranges(m.pool, static_cast<uint32_t>(ff.size()), 4096,
                    [&](uint32_t b, uint32_t e) { cpu::gelu(ff.data(), ff.data(), b, e); });
    m.linear(L.down, L.down_b.data(), ff.data(), N, h.data());
    m.add_into(x.data(), h.data(), x.size());
  }
  m.layer_norm(x.data(), m.post_ln_w, m.post_ln_b, s.eps, N, E, x.data());

  // Gemma 3's projector: n_merge x n_merge average pooling of the patch grid, RMS norm, then
  // the projection to the text width.
  const uint32_t k_side = s.n_merge, out_side = side / k_side, T = out_side * out_side;
  std::vector<float> pooled(size_t{T} * E, 0.0f);
  const float inv_area = 1.0f / static_cast<float>(k_side * k_side);
  for (uint32_t t = 0; t < T; ++t) {
    float* out = &pooled[size_t{t} * E];
    const uint32_t oy = t / out_side, ox = t % out_side;
    for (uint32_t dy = 0; dy < k_side; ++dy)
      for (uint32_t dx = 0; dx < k_side; ++dx) {
        const float* in = &x[(size_t{oy * k_side + dy} * side + ox * k_side + dx) * E];
        for (uint32_t i = 0; i < E; ++i) out[i] += in[i];
      }
    for (uint32_t i = 0; i < E; ++i) out[i] *= inv_area;
  }
  const cpu::RmsNormArgs norm{pooled.data(), nullptr, m.soft_norm_w.data(), pooled.data(), E, 0, 0,
                              s.eps};
  cpu::rms_norm(norm, 0, T);

  ImageEmbeddings out;
  out.n_tokens = T;
  out.n_embd = s.text_embd;
  out.data.resize(size_t{T} * s.text_embd);
  m.linear(m.projection, nullptr, pooled.data(), T, out.data.data());
  return out;
}

void ImageEncoder::load_pixtral(const VisionWeights& w) {
  const uint64_t E = spec_.n_embd, F = spec_.n_ff, P = spec_.patch_size, M = spec_.n_merge;
  Impl& m = *impl_;
  m.patch = matrix_view(w.patch_w, 3 * P * P);
  m.patch_b = tensor_to_f32(w.patch_b);
  m.pre_ln_w = tensor_to_f32(w.pre_ln_w);
  for (const VitLayerWeights& L : w.layers) {
    CpuVitLayer p{};
    p.ln1_w = tensor_to_f32(L.ln1_w), p.ln2_w = tensor_to_f32(L.ln2_w);
    p.q = matrix_view(L.q_w, E), p.q_b = tensor_to_f32(L.q_b);
    p.k = matrix_view(L.k_w, E), p.k_b = tensor_to_f32(L.k_b);
    p.v = matrix_view(L.v_w, E), p.v_b = tensor_to_f32(L.v_b);
    p.o = matrix_view(L.o_w, E), p.o_b = tensor_to_f32(L.o_b);
    p.gate = matrix_view(L.gate_w, E);
    p.up = matrix_view(L.up_w, E);
    p.down = matrix_view(L.down_w, F);
    m.layers.push_back(std::move(p));
  }
  m.post_ln_w = tensor_to_f32(w.post_ln_w);
  m.input_norm_w = tensor_to_f32(w.input_norm_w);
  if (M > 1) m.merger = matrix_view(w.merger_w, E * M * M);
  m.mm1 = matrix_view(w.mm1_w, E);
  m.mm1_b = tensor_to_f32(w.mm1_b);
  m.mm2 = matrix_view(w.mm2_w, spec_.text_embd);
  m.mm2_b = tensor_to_f32(w.mm2_b);
  m.img_break = tensor_to_f32(w.img_break);
}

ImageEmbeddings ImageEncoder::encode_pixtral(const TowerPixels& pixels) {
  const VisionSpec& s = spec_;
  Impl& m = *impl_;
  const uint32_t P = s.patch_size, M = s.n_merge, E = s.n_embd, F = s.n_ff, T = s.text_embd;
  const uint32_t grid_w = pixels.width / P, grid_h = pixels.height / P, N = grid_w * grid_h;
  const std::vector<float> cols = patch_rows(pixels, P);
  std::vector<float> x(size_t{N} * E), h(size_t{N} * E), q(size_t{N} * E), k(size_t{N} * E),
      v(size_t{N} * E), att(size_t{N} * E), gate(size_t{N} * F), up(size_t{N} * F);
  m.linear(m.patch, m.patch_b, cols.data(), N, x.data());
  if (!m.pre_ln_w.empty()) m.rms_norm(x.data(), m.pre_ln_w, s.eps, N, E, x.data());

  const Rope2dArgs rope_q{q.data(), E, N, s.n_head, s.head_dim(), grid_w, s.rope_theta};
  Rope2dArgs rope_k = rope_q;
  rope_k.x = k.data();
  for (const CpuVitLayer& L : m.layers) {
    m.rms_norm(x.data(), L.ln1_w, s.eps, N, E, h.data());
    const cpu::Product qkv[] = {
        {&L.q, q.data(), E, false}, {&L.k, k.data(), E, false}, {&L.v, v.data(), E, false}};
    cpu::matmul(qkv, h.data(), E, N, m.pool, m.ws);
    parallel_ranges(m.pool, N, 8, [&](uint32_t b, uint32_t e) {
      if (!L.q_b.empty()) cpu::add_bias(q.data(), L.q_b.data(), E, 0, b, e);
      if (!L.k_b.empty()) cpu::add_bias(k.data(), L.k_b.data(), E, 0, b, e);
      if (!L.v_b.empty()) cpu::add_bias(v.data(), L.v_b.data(), E, 0, b, e);
      rope_2d(rope_q, b, e);
      rope_2d(rope_k, b, e);
    });
    cpu_tower_attention(s, q.data(), k.data(), v.data(), att.data(), N, m.pool, m.ws);
    m.linear(L.o, L.o_b, att.data(), N, h.data());
    m.add_into(x.data(), h.data(), x.size());

    m.rms_norm(x.data(), L.ln2_w, s.eps, N, E, h.data());
    const cpu::Product gate_up[] = {{&L.gate, gate.data(), F, false}, {&L.up, up.data(), F, false}};
    cpu::matmul(gate_up, h.data(), E, N, m.pool, m.ws);
    const cpu::GluArgs glu{gate.data(), up.data(), gate.data(), F, cpu::GluActivation::Silu};
    parallel_ranges(m.pool, N, 8, [&](uint32_t b, uint32_t e) { cpu::glu(glu, b, e); });
    m.linear(L.down, nullptr, gate.data(), N, h.data());
    m.add_into(x.data(), h.data(), x.size());
  }
  if (!m.post_ln_w.empty()) m.rms_norm(x.data(), m.post_ln_w, s.eps, N, E, x.data());

  // The patch merger: RMS norm, then each n_merge x n_merge neighbourhood as one row of
  // (channel, row, column) values (torch's unfold, llama.cpp's im2col) through a linear layer.
  const uint32_t out_w = grid_w / M, out_h = grid_h / M, n_merged = out_w * out_h;
  std::vector<float> merged(size_t{n_merged} * E);
  if (M > 1) {
    m.rms_norm(x.data(), m.input_norm_w, s.eps, N, E, x.data());
    const uint32_t K = E * M * M;
    std::vector<float> unfolded(size_t{n_merged} * K);
    parallel_ranges(m.pool, n_merged, 8, [&](uint32_t b, uint32_t e) {
      for (uint32_t t = b; t < e; ++t) {
        const uint32_t oy = t / out_w, ox = t % out_w;
        float* row = &unfolded[size_t{t} * K];
        for (uint32_t ky = 0; ky < M; ++ky)
          for (uint32_t kx = 0; kx < M; ++kx) {
            const float* in = &x[(size_t{oy * M + ky} * grid_w + ox * M + kx) * E];
            for (uint32_t c = 0; c < E; ++c) row[(size_t{c} * M + ky) * M + kx] = in[c];
          }
      }
    });
    m.linear(m.merger, nullptr, unfolded.data(), n_merged, merged.data());
  } else {
    merged = std::move(x);
  }
  std::vector<float> hidden(size_t{n_merged} * T), projected(size_t{n_merged} * T);
  m.linear(m.mm1, m.mm1_b, merged.data(), n_merged, hidden.data());
  parallel_ranges(m.pool, static_cast<uint32_t>(hidden.size()), 4096,
                  [&](uint32_t b, uint32_t e) { cpu::gelu(hidden.data(), hidden.data(), b, e); });
  m.linear(m.mm2, m.mm2_b, hidden.data(), n_merged, projected.data());

  return pixtral_rows_with_breaks(projected, out_w, out_h, m.img_break);
}

void ImageEncoder::load_qwen25vl(const VisionWeights& w) {
  const uint64_t E = spec_.n_embd, F = spec_.n_ff, P = spec_.patch_size;
  Impl& m = *impl_;
  m.patch_sum = tensor_to_f32(w.patch_w);
  const std::vector<float> second = tensor_to_f32(w.patch_w1);
  for (size_t i = 0; i < second.size(); ++i) m.patch_sum[i] += second[i];
  m.patch = {gguf::TensorType::F32, reinterpret_cast<const std::byte*>(m.patch_sum.data()),
             3 * P * P, E};
  m.patch_b = tensor_to_f32(w.patch_b);
  m.position = tensor_to_f32(w.position);  // Qwen3-VL's
  for (const VitLayerWeights& L : w.layers) {
    CpuVitLayer p{};
    p.ln1_w = tensor_to_f32(L.ln1_w), p.ln2_w = tensor_to_f32(L.ln2_w);
    p.ln1_b = tensor_to_f32(L.ln1_b), p.ln2_b = tensor_to_f32(L.ln2_b);
    p.q = matrix_view(L.q_w, E), p.q_b = tensor_to_f32(L.q_b);
    p.k = matrix_view(L.k_w, E), p.k_b = tensor_to_f32(L.k_b);
    p.v = matrix_view(L.v_w, E), p.v_b = tensor_to_f32(L.v_b);
    p.o = matrix_view(L.o_w, E), p.o_b = tensor_to_f32(L.o_b);
    if (!L.gate_w.bytes.empty()) p.gate = matrix_view(L.gate_w, E);
    p.gate_b = tensor_to_f32(L.gate_b);
    p.up = matrix_view(L.up_w, E), p.up_b = tensor_to_f32(L.up_b);
    p.down = matrix_view(L.down_w, F), p.down_b = tensor_to_f32(L.down_b);
    m.layers.push_back(std::move(p));
  }
  m.post_ln_w = tensor_to_f32(w.post_ln_w);
  m.post_ln_b = tensor_to_f32(w.post_ln_b);
  m.mm1 = matrix_view(w.mm1_w, 4 * E);
  m.mm1_b = tensor_to_f32(w.mm1_b);
  m.mm2 = matrix_view(w.mm2_w, 4 * E);
  m.mm2_b = tensor_to_f32(w.mm2_b);
  for (const DeepstackWeights& d : w.deepstack) {
    CpuDeepstack c;
    c.layer = d.layer;
    c.norm_w = tensor_to_f32(d.norm_w), c.norm_b = tensor_to_f32(d.norm_b);
    c.fc1 = matrix_view(d.fc1_w, 4 * E), c.fc1_b = tensor_to_f32(d.fc1_b);
    c.fc2 = matrix_view(d.fc2_w, 4 * E), c.fc2_b = tensor_to_f32(d.fc2_b);
    m.deepstack.push_back(std::move(c));
  }
}

ImageEmbeddings ImageEncoder::encode_qwen25vl(const TowerPixels& pixels) {
  const VisionSpec& s = spec_;
  Impl& m = *impl_;
  const uint32_t P = s.patch_size, E = s.n_embd, F = s.n_ff, T = s.text_embd;
  const bool qwen3 = s.projector == ProjectorType::Qwen3vl;
  const QwenVlLayout lay = qwen_vl_layout(s, pixels.width, pixels.height);
  const auto N = static_cast<uint32_t>(lay.order.size());
  const std::vector<float> cols = patch_rows(pixels, P, lay.order);
  std::vector<float> x(size_t{N} * E), h(size_t{N} * E), q(size_t{N} * E), k(size_t{N} * E),
      v(size_t{N} * E), att(size_t{N} * E), gate(size_t{N} * F), up(size_t{N} * F);
  m.linear(m.patch, m.patch_b, cols.data(), N, x.data());
  if (qwen3) {
    const std::vector<float> pos = qwen3vl_positions(m.position.data(), s.pos_side, E, lay);
    m.add_into(x.data(), pos.data(), x.size());
  }
  // Qwen2.5-VL's RMS norms, Qwen3-VL's LayerNorms.
  auto norm = [&](const std::vector<float>& w, const std::vector<float>& b, uint32_t rows,
                  uint32_t n, float* y) {
    if (qwen3) {
      m.layer_norm(x.data(), w, b, s.eps, rows, n, y);
    } else {
      m.rms_norm(x.data(), w, s.eps, rows, n, y);
    }
  };
  // Qwen3-VL: the units' outputs (merger, then each deepstack merger) side by side.
  const uint32_t units = N / 4, n_ds = static_cast<uint32_t>(m.deepstack.size());
  std::vector<float> merged(size_t{units} * T * (1 + n_ds));
  std::vector<float> hidden(size_t{units} * 4 * E), projected(size_t{units} * T);
  // A merger MLP over x's units (4 rows as one of 4 n_embd, already normed into `in`): fc1,
  // GELU, fc2, written as output column block `slot`.
  auto merge = [&](const float* in, const cpu::WeightView& fc1, const std::vector<float>& b1,
                   const cpu::WeightView& fc2, const std::vector<float>& b2, uint32_t slot) {
    m.linear(fc1, b1, in, units, hidden.data());
    parallel_ranges(m.pool, static_cast<uint32_t>(hidden.size()), 4096,
                    [&](uint32_t b, uint32_t e) { cpu::gelu(hidden.data(), hidden.data(), b, e); });
    m.linear(fc2, b2, hidden.data(), units, projected.data());
    for (uint32_t r = 0; r < units; ++r)
      std::copy_n(&projected[size_t{lay.unit_of[r]} * T], T,
                  &merged[(size_t{r} * (1 + n_ds) + slot) * T]);
  };

  const RopeVisionArgs rope_q{q.data(), E, s.n_head, s.head_dim(), lay.pos.data(), s.rope_theta};
  RopeVisionArgs rope_k = rope_q;
  rope_k.x = k.data();
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim()));
  uint32_t next_ds = 0;
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    const CpuVitLayer& L = m.layers[l];
    norm(L.ln1_w, L.ln1_b, N, E, h.data());
    const cpu::Product qkv[] = {
        {&L.q, q.data(), E, false}, {&L.k, k.data(), E, false}, {&L.v, v.data(), E, false}};
    cpu::matmul(qkv, h.data(), E, N, m.pool, m.ws);
    parallel_ranges(m.pool, N, 8, [&](uint32_t b, uint32_t e) {
      if (!L.q_b.empty()) cpu::add_bias(q.data(), L.q_b.data(), E, 0, b, e);
      if (!L.k_b.empty()) cpu::add_bias(k.data(), L.k_b.data(), E, 0, b, e);
      if (!L.v_b.empty()) cpu::add_bias(v.data(), L.v_b.data(), E, 0, b, e);
      rope_vision(rope_q, b, e);
      rope_vision(rope_k, b, e);
    });
    // A windowed layer: each window's rows attend among themselves (contiguous, block-diagonal).
    const std::vector<uint32_t> all = {0, N};
    const std::vector<uint32_t>& spans = s.full_attention(l) ? all : lay.windows;
    for (size_t w = 0; w + 1 < spans.size(); ++w) {
      const size_t off = size_t{spans[w]} * E;
      const DenseAttentionArgs a{
          q.data() + off,          k.data() + off, v.data() + off, E,    att.data() + off, E,
          spans[w + 1] - spans[w], s.n_head,       s.head_dim(),   scale};
      dense_attention(a, m.pool, m.ws);
    }
    m.linear(L.o, L.o_b, att.data(), N, h.data());
    m.add_into(x.data(), h.data(), x.size());

    norm(L.ln2_w, L.ln2_b, N, E, h.data());
    if (qwen3) {  // GELU MLP
      m.linear(L.up, L.up_b, h.data(), N, gate.data());
      parallel_ranges(m.pool, N * F, 4096,
                      [&](uint32_t b, uint32_t e) { cpu::gelu(gate.data(), gate.data(), b, e); });
    } else {  // SiLU-gated
      const cpu::Product gate_up[] = {{&L.gate, gate.data(), F, false},
                                      {&L.up, up.data(), F, false}};
      cpu::matmul(gate_up, h.data(), E, N, m.pool, m.ws);
      parallel_ranges(m.pool, N, 8, [&](uint32_t b, uint32_t e) {
        if (!L.gate_b.empty()) cpu::add_bias(gate.data(), L.gate_b.data(), F, 0, b, e);
        if (!L.up_b.empty()) cpu::add_bias(up.data(), L.up_b.data(), F, 0, b, e);
        cpu::glu({gate.data(), up.data(), gate.data(), F, cpu::GluActivation::Silu}, b, e);
      });
    }
    m.linear(L.down, L.down_b, gate.data(), N, h.data());
    m.add_into(x.data(), h.data(), x.size());
    if (next_ds < n_ds && m.deepstack[next_ds].layer == l) {
      // Deepstack: the layer's output by unit, LayerNormed over 4 n_embd, through its merger.
      const CpuDeepstack& d = m.deepstack[next_ds];
      m.layer_norm(x.data(), d.norm_w, d.norm_b, s.eps, units, 4 * E, att.data());
      merge(att.data(), d.fc1, d.fc1_b, d.fc2, d.fc2_b, ++next_ds);
    }
  }
  if (!m.post_ln_w.empty()) norm(m.post_ln_w, m.post_ln_b, N, E, x.data());

  // The merger: each unit's four consecutive rows as one row of 4 n_embd, mm.0, GELU, mm.2; the
  // units back in row-major order.
  merge(x.data(), m.mm1, m.mm1_b, m.mm2, m.mm2_b, 0);
  ImageEmbeddings out;
  out.n_tokens = units;
  out.n_embd = T * (1 + n_ds);
  out.data = std::move(merged);
  return out;
}

ImageEmbeddings pixtral_rows_with_breaks(std::span<const float> merged, uint32_t out_w,
                                         uint32_t out_h, std::span<const float> img_break) {
  const auto T = static_cast<uint32_t>(img_break.size());
  ImageEmbeddings out;
  out.n_tokens = out_w * out_h + out_h - 1;
  out.n_embd = T;
  out.data.resize(size_t{out.n_tokens} * T);
  for (uint32_t r = 0; r < out_h; ++r) {
    float* dst = &out.data[size_t{r} * (out_w + 1) * T];
    std::copy_n(&merged[size_t{r} * out_w * T], size_t{out_w} * T, dst);
    if (r + 1 < out_h) std::copy_n(img_break.data(), T, dst + size_t{out_w} * T);
  }
  return out;
}

}  // namespace vkllm::vision
