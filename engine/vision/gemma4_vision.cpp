#include "engine/vision/gemma4_vision.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/cpu/ops.h"
#include "engine/cpu/quant_matmul.h"
#include "engine/cpu/thread_pool.h"
#include "engine/gguf/quants.h"
#include "engine/vision/dense_attention.h"
#include "engine/vision/projector_tensors.h"

namespace vkllm::vision {

namespace {

// A scalar the file may carry (one F32 value, as llama.cpp's get_scalar reads it), else `dflt`.
float g4v_scalar(const gguf::GgufFile& f, const std::string& name, float dflt) {
  const gguf::TensorInfo* t = f.find_tensor(name);
  if (!t) return dflt;
  if (t->type != gguf::TensorType::F32 || t->element_count() != 1) {
    throw std::runtime_error("vision projector tensor " + name + " is not one F32 value");
  }
  float v = 0.0f;
  std::memcpy(&v, f.tensor_data(*t).data(), sizeof v);
  return v;
}

Gemma4vLinear g4v_linear(const gguf::GgufFile& f, const std::string& base,
                         const std::vector<uint64_t>& shape) {
  Gemma4vLinear l;
  l.w = need_tensor(f, base + ".weight", shape);
  l.clamp = {
      g4v_scalar(f, base + ".input_min", -FLT_MAX), g4v_scalar(f, base + ".input_max", FLT_MAX),
      g4v_scalar(f, base + ".output_min", -FLT_MAX), g4v_scalar(f, base + ".output_max", FLT_MAX)};
  return l;
}

template <typename Fn>
void g4v_ranges(cpu::ThreadPool& pool, uint32_t n, uint32_t grain, const Fn& fn) {
  const uint32_t slices = std::max(1u, std::min(n / std::max(grain, 1u), pool.size() * 4));
  const uint32_t per = (n + slices - 1) / slices;
  pool.parallel_for(slices, [&](uint32_t s, unsigned) {
    const uint32_t b = s * per, e = std::min(n, b + per);
    if (b < e) fn(b, e);
  });
}

}  // namespace

VisionSpec read_gemma4v_spec(const gguf::GgufFile& f) {
  VisionSpec s;
  s.projector = ProjectorType::Gemma4v;
  const std::string v = "clip.vision.";
  s.image_size = f.get_optional<uint32_t>(v + "image_size").value_or(224);
  s.patch_size = need_u32(f, v + "patch_size");
  s.n_embd = need_u32(f, v + "embedding_length");
  s.n_head = need_u32(f, v + "attention.head_count");
  s.n_ff = need_u32(f, v + "feed_forward_length");
  s.n_layer = need_u32(f, v + "block_count");
  s.eps = f.get_optional<float>(v + "attention.layer_norm_epsilon").value_or(1e-6f);
  const auto mean = f.get_array<float>(v + "image_mean");
  const auto std = f.get_array<float>(v + "image_std");
  if (mean.size() < 3 || std.size() < 3) {
    throw std::runtime_error("vision projector needs 3-value image_mean and image_std");
  }
  for (int c = 0; c < 3; ++c) {
    s.mean[c] = mean[c];
    s.std[c] = std[c];
    if (!(s.std[c] > 0.0f)) throw std::runtime_error("vision projector image_std is not positive");
  }
  s.n_merge = f.get_optional<uint32_t>(v + "projector.scale_factor").value_or(3);
  s.rope_theta = 100.0f;
  set_merged_patch_budget(s, "gemma4v", 0, 70, 1120);
  const gguf::TensorInfo* proj = f.find_tensor("mm.input_projection.weight");
  if (!proj || proj->shape.size() != 2 || proj->shape[0] != s.n_embd || proj->shape[1] == 0) {
    throw std::runtime_error(
        "gemma4v vision projector has no mm.input_projection.weight of shape [" +
        std::to_string(s.n_embd) + ", text width]");
  }
  s.text_embd = static_cast<uint32_t>(proj->shape[1]);
  const gguf::TensorInfo* pos = f.find_tensor("v.position_embd.weight");
  if (!pos || pos->shape.size() != 3 || pos->shape[0] != s.n_embd || pos->shape[2] != 2 ||
      pos->shape[1] == 0) {
    throw std::runtime_error("gemma4v vision projector has no v.position_embd.weight of shape [" +
                             std::to_string(s.n_embd) + ", positions, 2]");
  }
  s.n_positions = static_cast<uint32_t>(pos->shape[1]);
  return s;
}

Gemma4vWeights read_gemma4v_weights(const gguf::GgufFile& f, const VisionSpec& s) {
  const uint64_t E = s.n_embd, F = s.n_ff, P = s.patch_size, D = s.head_dim(), T = s.text_embd;
  Gemma4vWeights w;
  const bool gelu = f.get_optional<bool>("clip.use_gelu").value_or(false);
  const bool silu = f.get_optional<bool>("clip.use_silu").value_or(false);
  if (gelu && silu) throw std::runtime_error("vision projector sets both use_gelu and use_silu");
  w.act = gelu ? Gemma4vAct::GeluTanh : silu ? Gemma4vAct::Silu : Gemma4vAct::GeluQuick;
  w.patch = need_tensor(f, "v.patch_embd.weight", {P, P, 3, E});
  w.position = need_tensor(f, "v.position_embd.weight", {E, s.n_positions, 2});
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    const std::string b = "v.blk." + std::to_string(l) + ".";
    Gemma4vLayer L;
    L.ln1 = need_tensor(f, b + "ln1.weight", {E});
    L.q = g4v_linear(f, b + "attn_q", {E, E});
    L.k = g4v_linear(f, b + "attn_k", {E, E});
    L.v = g4v_linear(f, b + "attn_v", {E, E});
    L.q_norm = need_tensor(f, b + "attn_q_norm.weight", {D});
    L.k_norm = need_tensor(f, b + "attn_k_norm.weight", {D});
    L.o = g4v_linear(f, b + "attn_out", {E, E});
    L.attn_post_norm = need_tensor(f, b + "attn_post_norm.weight", {E});
    L.ln2 = need_tensor(f, b + "ln2.weight", {E});
    L.gate = g4v_linear(f, b + "ffn_gate", {E, F});
    L.up = g4v_linear(f, b + "ffn_up", {E, F});
    L.down = g4v_linear(f, b + "ffn_down", {F, E});
    L.ffn_post_norm = need_tensor(f, b + "ffn_post_norm.weight", {E});
    L.out_scale = optional_tensor(f, b + "out_scale.weight", {1});
    w.layers.push_back(std::move(L));
  }
  w.std_bias = optional_tensor(f, "v.std_bias", {E});
  w.std_scale = optional_tensor(f, "v.std_scale", {E});
  w.proj = g4v_linear(f, "mm.input_projection", {E, T});
  return w;
}

void rope_gemma4v(const Gemma4vRopeArgs& a, uint32_t begin, uint32_t end) {
  const uint32_t half = a.head_dim / 2, pairs = half / 2;
  // ggml's rope cache: theta_i = pos * base^(-2i / n_dims) with n_dims = half, in single
  // precision, the power taken step by step as there.
  std::vector<float> freq(pairs);
  const float step = std::pow(a.theta, -2.0f / static_cast<float>(half));
  float f = 1.0f;
  for (uint32_t j = 0; j < pairs; ++j, f *= step) freq[j] = f;
  for (uint32_t t = begin; t < end; ++t) {
    const float pos[2] = {static_cast<float>(t % a.grid_width),
                          static_cast<float>(t / a.grid_width)};
    for (uint32_t h = 0; h < a.n_head; ++h) {
      float* x = a.x + size_t{t} * a.stride + size_t{h} * a.head_dim;
      for (uint32_t part = 0; part < 2; ++part) {
        float* v = x + part * half;
        for (uint32_t j = 0; j < pairs; ++j) {
          const float angle = pos[part] * freq[j];
          const float c = std::cos(angle), sn = std::sin(angle);
          const float x0 = v[j], x1 = v[j + pairs];
          v[j] = x0 * c - x1 * sn;
          v[j + pairs] = x0 * sn + x1 * c;
        }
      }
    }
  }
}

void gelu_quick_mul(float* gate, const float* up, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    const float x = gate[i];
    gate[i] = x / (1.0f + std::exp(-1.702f * x)) * up[i];
  }
}

// A linear layer as the CPU matmul reads it, with its clamps.
struct Gemma4vCpuLinear {
  cpu::WeightView w{};
  Gemma4vClamp clamp;
};

struct Gemma4vCpuLayer {
  std::vector<float> ln1, q_norm, k_norm, attn_post_norm, ln2, ffn_post_norm;
  float out_scale = 1.0f;
  Gemma4vCpuLinear q, k, v, o, gate, up, down;
};

struct Gemma4vCpuTower::State {
  State(const VisionSpec& sp, cpu::ThreadPool& p, cpu::MatmulWorkspace& w)
      : spec(sp), pool(p), ws(w) {}
  const VisionSpec& spec;
  cpu::ThreadPool& pool;
  cpu::MatmulWorkspace& ws;
  Gemma4vAct act = Gemma4vAct::GeluQuick;
  cpu::WeightView patch{};
  std::vector<float> position, std_bias, std_scale;
  std::vector<Gemma4vCpuLayer> layers;
  Gemma4vCpuLinear proj;
  std::vector<float> clamped;  // a clamped copy of a linear layer's input

  // y = clamp_out(W clamp_in(x)) for n rows of w.cols.
  void linear(const Gemma4vCpuLinear& l, const float* x, uint32_t n, float* y) {
    if (l.clamp.clamps_input()) {
      const uint64_t count = uint64_t{n} * l.w.cols;
      clamped.resize(count);
      g4v_ranges(pool, static_cast<uint32_t>(count), 4096, [&](uint32_t b, uint32_t e) {
        for (uint32_t i = b; i < e; ++i)
          clamped[i] = std::clamp(x[i], l.clamp.in_min, l.clamp.in_max);
      });
      x = clamped.data();
    }
    const cpu::Product p{&l.w, y, l.w.rows, false};
    cpu::matmul({&p, 1}, x, l.w.cols, n, pool, ws);
    if (l.clamp.clamps_output()) {
      const uint64_t count = uint64_t{n} * l.w.rows;
      g4v_ranges(pool, static_cast<uint32_t>(count), 4096, [&](uint32_t b, uint32_t e) {
        for (uint32_t i = b; i < e; ++i) y[i] = std::clamp(y[i], l.clamp.out_min, l.clamp.out_max);
      });
    }
  }
  // y = x / rms(x) * w over rows of n values (w empty: no weight).
  void rms_norm(float* x, const std::vector<float>& w, uint32_t n_rows, uint32_t n, float* y) {
    const cpu::RmsNormArgs a{x, nullptr, w.empty() ? nullptr : w.data(), y, n, 0, 0, spec.eps};
    g4v_ranges(pool, n_rows, 64, [&](uint32_t r0, uint32_t r1) { cpu::rms_norm(a, r0, r1); });
  }
  void add_into(float* x, const float* y, uint64_t n) {
    g4v_ranges(pool, static_cast<uint32_t>(n), 4096,
               [&](uint32_t b, uint32_t e) { cpu::add(x, y, x, b, e); });
  }
};

Gemma4vCpuTower::Gemma4vCpuTower(const VisionSpec& spec, const Gemma4vWeights& w,
                                 cpu::ThreadPool& pool, cpu::MatmulWorkspace& ws)
    : s_(std::make_unique<State>(spec, pool, ws)) {
  const uint64_t E = spec.n_embd, F = spec.n_ff, P = spec.patch_size;
  State& m = *s_;
  m.act = w.act;
  m.patch = matrix_view(w.patch, 3 * P * P);
  m.position = tensor_to_f32(w.position);
  auto linear = [](const Gemma4vLinear& l, uint64_t cols) {
    return Gemma4vCpuLinear{matrix_view(l.w, cols), l.clamp};
  };
  for (const Gemma4vLayer& L : w.layers) {
    Gemma4vCpuLayer c;
    c.ln1 = tensor_to_f32(L.ln1);
    c.q_norm = tensor_to_f32(L.q_norm);
    c.k_norm = tensor_to_f32(L.k_norm);
    c.attn_post_norm = tensor_to_f32(L.attn_post_norm);
    c.ln2 = tensor_to_f32(L.ln2);
    c.ffn_post_norm = tensor_to_f32(L.ffn_post_norm);
    if (!L.out_scale.bytes.empty()) c.out_scale = tensor_to_f32(L.out_scale)[0];
    c.q = linear(L.q, E), c.k = linear(L.k, E), c.v = linear(L.v, E), c.o = linear(L.o, E);
    c.gate = linear(L.gate, E), c.up = linear(L.up, E), c.down = linear(L.down, F);
    m.layers.push_back(std::move(c));
  }
  m.std_bias = tensor_to_f32(w.std_bias);
  m.std_scale = tensor_to_f32(w.std_scale);
  m.proj = linear(w.proj, E);
}

Gemma4vCpuTower::~Gemma4vCpuTower() = default;

ImageEmbeddings Gemma4vCpuTower::encode(const TowerPixels& pixels) {
  State& m = *s_;
  const VisionSpec& s = m.spec;
  const uint32_t P = s.patch_size, E = s.n_embd, F = s.n_ff, D = s.head_dim(), H = s.n_head;
  const uint32_t grid_w = pixels.width / P, grid_h = pixels.height / P, N = grid_w * grid_h;
  if (grid_w > s.n_positions || grid_h > s.n_positions) {
    throw std::invalid_argument("image encoder: a " + std::to_string(grid_w) + " x " +
                                std::to_string(grid_h) +
                                " patch grid is beyond the tower's learned positions (" +
                                std::to_string(s.n_positions) + ")");
  }
  // The graph's first step, 2 x - 1 on the normalised pixels.
  TowerPixels scaled = pixels;
  for (float& v : scaled.planes) v = 2.0f * v - 1.0f;
  const std::vector<float> cols = patch_rows(scaled, P);
  std::vector<float> x(size_t{N} * E), h(size_t{N} * E), q(size_t{N} * E), k(size_t{N} * E),
      v(size_t{N} * E), att(size_t{N} * E), gate(size_t{N} * F), up(size_t{N} * F);
  m.linear({m.patch, {}}, cols.data(), N, x.data());
  const float* tbl_x = m.position.data();
  const float* tbl_y = tbl_x + size_t{s.n_positions} * E;
  g4v_ranges(m.pool, N, 16, [&](uint32_t b, uint32_t e) {
    for (uint32_t t = b; t < e; ++t) {
      float* row = &x[size_t{t} * E];
      const float* px = tbl_x + size_t{t % grid_w} * E;
      const float* py = tbl_y + size_t{t / grid_w} * E;
      for (uint32_t i = 0; i < E; ++i) row[i] = row[i] + px[i] + py[i];
    }
  });

  const Gemma4vRopeArgs rope_q{q.data(), E, H, D, grid_w, s.rope_theta};
  Gemma4vRopeArgs rope_k = rope_q;
  rope_k.x = k.data();
  for (const Gemma4vCpuLayer& L : m.layers) {
    m.rms_norm(x.data(), L.ln1, N, E, h.data());
    m.linear(L.q, h.data(), N, q.data());
    m.linear(L.k, h.data(), N, k.data());
    m.linear(L.v, h.data(), N, v.data());
    m.rms_norm(q.data(), L.q_norm, N * H, D, q.data());
    m.rms_norm(k.data(), L.k_norm, N * H, D, k.data());
    m.rms_norm(v.data(), {}, N * H, D, v.data());
    g4v_ranges(m.pool, N, 8, [&](uint32_t b, uint32_t e) {
      rope_gemma4v(rope_q, b, e);
      rope_gemma4v(rope_k, b, e);
    });
    dense_attention({q.data(), k.data(), v.data(), E, att.data(), E, N, H, D, 1.0f}, m.pool, m.ws);
    m.linear(L.o, att.data(), N, h.data());
    m.rms_norm(h.data(), L.attn_post_norm, N, E, h.data());
    m.add_into(x.data(), h.data(), x.size());

    m.rms_norm(x.data(), L.ln2, N, E, h.data());
    m.linear(L.gate, h.data(), N, gate.data());
    m.linear(L.up, h.data(), N, up.data());
    g4v_ranges(m.pool, N, 8, [&](uint32_t b, uint32_t e) {
      if (m.act == Gemma4vAct::GeluQuick) {
        gelu_quick_mul(&gate[size_t{b} * F], &up[size_t{b} * F], uint64_t{e - b} * F);
        return;
      }
      const auto act =
          m.act == Gemma4vAct::Silu ? cpu::GluActivation::Silu : cpu::GluActivation::GeluTanh;
      cpu::glu({gate.data(), up.data(), gate.data(), F, act}, b, e);
    });
    m.linear(L.down, gate.data(), N, h.data());
    m.rms_norm(h.data(), L.ffn_post_norm, N, E, h.data());
    m.add_into(x.data(), h.data(), x.size());
    if (L.out_scale != 1.0f) {
      g4v_ranges(m.pool, static_cast<uint32_t>(x.size()), 4096, [&](uint32_t b, uint32_t e) {
        cpu::scale(x.data(), x.data(), L.out_scale, b, e);
      });
    }
  }

  // The pooler: n_merge x n_merge averages of the grid, row-major, times sqrt(n_embd); then the
  // standardisation, an RMS norm and the projection.
  const uint32_t M = s.n_merge, out_w = grid_w / M, out_h = grid_h / M, n_out = out_w * out_h;
  std::vector<float> pooled(size_t{n_out} * E, 0.0f);
  const float scale = std::sqrt(static_cast<float>(E)) / static_cast<float>(M * M);
  g4v_ranges(m.pool, n_out, 4, [&](uint32_t b, uint32_t e) {
    for (uint32_t t = b; t < e; ++t) {
      float* out = &pooled[size_t{t} * E];
      const uint32_t oy = t / out_w, ox = t % out_w;
      for (uint32_t dy = 0; dy < M; ++dy)
        for (uint32_t dx = 0; dx < M; ++dx) {
          const float* in = &x[(size_t{oy * M + dy} * grid_w + ox * M + dx) * E];
          for (uint32_t i = 0; i < E; ++i) out[i] += in[i];
        }
      for (uint32_t i = 0; i < E; ++i) {
        float val = out[i] * scale;
        if (!m.std_bias.empty()) val -= m.std_bias[i];
        if (!m.std_scale.empty()) val *= m.std_scale[i];
        out[i] = val;
      }
    }
  });
  m.rms_norm(pooled.data(), {}, n_out, E, pooled.data());
  ImageEmbeddings out;
  out.n_tokens = n_out;
  out.n_embd = s.text_embd;
  out.data.resize(size_t{n_out} * s.text_embd);
  m.linear(m.proj, pooled.data(), n_out, out.data.data());
  return out;
}

}  // namespace vkllm::vision
