#include "tests/reference/reference_encoder.h"

#include <cmath>
#include <stdexcept>

#include "engine/gguf/quants.h"
#include "engine/model/weight_names.h"

namespace vkllm::reference {

using model::Weight;
using model::weight_name;

namespace {

using Vec = std::vector<float>;

float round_f16(float v) {
  uint8_t h[2];
  gguf::quantize(gguf::TensorType::F16, &v, h, 1);
  float out = 0;
  gguf::dequantize(gguf::TensorType::F16, h, &out, 1);
  return out;
}

double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

}  // namespace

ReferenceEncoder::ReferenceEncoder(const gguf::GgufFile& f)
    : spec_(model::ModelSpec::from_gguf(f)) {
  if (!spec_.is_encoder()) throw std::runtime_error("reference: not an encoder model");
  tok_embd_ = load_matrix(f, weight_name(Weight::TokenEmbd));
  type_embd_ = load_matrix(f, weight_name(Weight::TokenTypes));
  pos_embd_ = load_matrix(f, weight_name(Weight::PosEmbd), spec_.position_embd);
  embd_norm_w_ = load_matrix(f, weight_name(Weight::TokenEmbdNorm));
  embd_norm_b_ = load_matrix(f, weight_name(Weight::TokenEmbdNormBias));
  cls_ = load_matrix(f, weight_name(Weight::Cls), false);
  cls_b_ = load_matrix(f, weight_name(Weight::ClsBias), false);
  cls_out_ = load_matrix(f, weight_name(Weight::ClsOut), false);
  cls_out_b_ = load_matrix(f, weight_name(Weight::ClsOutBias), false);
  layers_.resize(spec_.n_layer);
  for (uint32_t l = 0; l < spec_.n_layer; ++l) {
    Layer& L = layers_[l];
    auto get = [&](Weight w, bool req = true) { return load_matrix(f, weight_name(w, l), req); };
    const bool bert = spec_.arch == model::Arch::Bert;
    if (bert) {
      L.wq = get(Weight::AttnQ);
      L.bq = get(Weight::AttnQBias);
      L.wk = get(Weight::AttnK);
      L.bk = get(Weight::AttnKBias);
      L.wv = get(Weight::AttnV);
      L.bv = get(Weight::AttnVBias);
      L.bo = get(Weight::AttnOutBias);
      L.up_b = get(Weight::FfnUpBias);
      L.down_b = get(Weight::FfnDownBias);
    } else {
      L.wqkv = get(Weight::AttnQKV);
      L.gate = get(Weight::FfnGate);
    }
    L.wo = get(Weight::AttnOut);
    L.attn_norm_w = get(Weight::AttnOutNorm);
    L.attn_norm_b = get(Weight::AttnOutNormBias);
    L.up = get(Weight::FfnUp);
    L.down = get(Weight::FfnDown);
    L.out_norm_w = get(Weight::LayerOutNorm);
    L.out_norm_b = get(Weight::LayerOutNormBias);
  }
}

namespace {

// y = W x (+ b)
template <typename M>
Vec affine(const M& w, const Vec& x, const M* b = nullptr) {
  if (x.size() != w.cols) throw std::logic_error("reference: matvec shape mismatch");
  Vec y(w.rows);
  for (uint32_t r = 0; r < w.rows; ++r) {
    double acc = 0;
    const auto row = w.row(r);
    for (uint32_t c = 0; c < w.cols; ++c) acc += double(row[c]) * x[c];
    if (b && !b->empty()) acc += b->w[r];
    y[r] = static_cast<float>(acc);
  }
  return y;
}

template <typename M>
void layer_norm(Vec& x, const M& w, const M& b, double eps) {
  double mean = 0, var = 0;
  for (float v : x) mean += v;
  mean /= double(x.size());
  for (float v : x) var += (v - mean) * (v - mean);
  var /= double(x.size());
  const double inv = 1.0 / std::sqrt(var + eps);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>((x[i] - mean) * inv * w.w[i] + b.w[i]);
  }
}

// NeoX rotation (pairs i, i + n_rot/2) of every head of v at position pos.
void rope_neox(Vec& v, uint32_t n_heads, uint32_t head_dim, uint32_t n_rot, uint32_t pos,
               double base, double scale) {
  for (uint32_t h = 0; h < n_heads; ++h) {
    float* head = v.data() + size_t{h} * head_dim;
    for (uint32_t i = 0; i < n_rot / 2; ++i) {
      const double theta = pos * std::pow(base, -2.0 * i / n_rot) * scale;
      const double c = std::cos(theta), s = std::sin(theta);
      const double x0 = head[i], x1 = head[i + n_rot / 2];
      head[i] = static_cast<float>(x0 * c - x1 * s);
      head[i + n_rot / 2] = static_cast<float>(x0 * s + x1 * c);
    }
  }
}

}  // namespace

std::vector<std::vector<float>> ReferenceEncoder::hidden_states(
    std::span<const int32_t> tokens) const {
  const auto& s = spec_;
  const uint32_t n = static_cast<uint32_t>(tokens.size()), E = s.n_embd, hd = s.head_dim;
  std::vector<Vec> x(n);
  for (uint32_t t = 0; t < n; ++t) {
    if (tokens[t] < 0 || static_cast<uint32_t>(tokens[t]) >= tok_embd_.rows) {
      throw std::out_of_range("reference: token id out of range");
    }
    x[t].resize(E);
    const auto te = tok_embd_.row(static_cast<uint32_t>(tokens[t]));
    const auto ty = type_embd_.row(0);  // every token is "sentence A", as llama.cpp feeds them
    for (uint32_t e = 0; e < E; ++e) {
      double v = double(te[e]) + ty[e];
      if (s.position_embd) v += pos_embd_.row(t)[e];
      x[t][e] = static_cast<float>(v);
    }
    layer_norm(x[t], embd_norm_w_, embd_norm_b_, s.norm_eps);
  }
  const uint32_t qd = s.n_embd_q(), kvd = s.n_embd_k_gqa(), group = s.n_head / s.n_head_kv;
  for (const Layer& L : layers_) {
    std::vector<Vec> q(n), k(n), v(n);
    for (uint32_t t = 0; t < n; ++t) {
      if (!L.wqkv.empty()) {
        const Vec qkv = affine(L.wqkv, x[t]);
        q[t].assign(qkv.begin(), qkv.begin() + qd);
        k[t].assign(qkv.begin() + qd, qkv.begin() + qd + kvd);
        v[t].assign(qkv.begin() + qd + kvd, qkv.end());
      } else {
        q[t] = affine(L.wq, x[t], &L.bq);
        k[t] = affine(L.wk, x[t], &L.bk);
        v[t] = affine(L.wv, x[t], &L.bv);
      }
      if (s.rope) {
        rope_neox(q[t], s.n_head, hd, s.rope_dims, t, s.rope_freq_base, s.rope_freq_scale);
        rope_neox(k[t], s.n_head_kv, hd, s.rope_dims, t, s.rope_freq_base, s.rope_freq_scale);
      }
      for (float& e : k[t]) e = round_f16(e);
      for (float& e : v[t]) e = round_f16(e);
    }
    for (uint32_t t = 0; t < n; ++t) {
      Vec attn(qd, 0.0f);
      for (uint32_t h = 0; h < s.n_head; ++h) {
        const uint32_t kvh = h / group;
        const uint32_t visible = s.causal_attn ? t + 1 : n;
        std::vector<double> score(visible);
        double mx = -INFINITY;
        for (uint32_t p = 0; p < visible; ++p) {
          double dot = 0;
          for (uint32_t i = 0; i < hd; ++i) {
            dot += double(q[t][size_t{h} * hd + i]) * k[p][size_t{kvh} * hd + i];
          }
          score[p] = dot * s.attn_scale;
          mx = std::max(mx, score[p]);
        }
        double sum = 0;
        for (double& sc : score) sum += sc = std::exp(sc - mx);
        for (uint32_t i = 0; i < hd; ++i) {
          double acc = 0;
          for (uint32_t p = 0; p < visible; ++p) acc += score[p] * v[p][size_t{kvh} * hd + i];
          attn[size_t{h} * hd + i] = static_cast<float>(acc / sum);
        }
      }
      const Vec o = affine(L.wo, attn, &L.bo);
      for (uint32_t e = 0; e < E; ++e) x[t][e] += o[e];
      layer_norm(x[t], L.attn_norm_w, L.attn_norm_b, s.norm_eps);

      Vec u = affine(L.up, x[t], &L.up_b);
      if (L.gate.empty()) {
        for (float& e : u) e = static_cast<float>(gelu_tanh(e));
      } else {
        const Vec g = affine(L.gate, x[t]);
        for (size_t i = 0; i < u.size(); ++i) {
          u[i] = static_cast<float>(g[i] / (1.0 + std::exp(-double(g[i]))) * u[i]);
        }
      }
      const Vec d = affine(L.down, u, &L.down_b);
      for (uint32_t e = 0; e < E; ++e) x[t][e] += d[e];
      layer_norm(x[t], L.out_norm_w, L.out_norm_b, s.norm_eps);
    }
  }
  return x;
}

std::vector<float> ReferenceEncoder::embed(std::span<const int32_t> tokens) const {
  const auto rows = hidden_states(tokens);
  const uint32_t E = spec_.n_embd;
  switch (spec_.pooling) {
    case model::Pooling::None: {
      Vec all;
      for (const auto& r : rows) all.insert(all.end(), r.begin(), r.end());
      return all;
    }
    case model::Pooling::Mean: {
      std::vector<double> acc(E, 0.0);
      for (const auto& r : rows) {
        for (uint32_t e = 0; e < E; ++e) acc[e] += r[e];
      }
      Vec out(E);
      for (uint32_t e = 0; e < E; ++e) out[e] = static_cast<float>(acc[e] / double(rows.size()));
      return out;
    }
    case model::Pooling::Cls:
      return rows.front();
    case model::Pooling::Last:
      return rows.back();
    case model::Pooling::Rank:
      break;
  }
  Vec h = rows.front();
  if (!cls_.empty()) {
    h = affine(cls_, h, &cls_b_);
    for (float& e : h) e = static_cast<float>(std::tanh(double(e)));
  }
  if (!cls_out_.empty()) h = affine(cls_out_, h, &cls_out_b_);
  return h;
}

}  // namespace vkllm::reference
