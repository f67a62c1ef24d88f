#include "tests/reference/reference_forward.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include "engine/gguf/quants.h"
#include "engine/model/weight_names.h"

namespace vkllm::reference {

using model::Weight;
using model::weight_name;

ReferenceModel::ReferenceModel(const gguf::GgufFile& f, bool llama_cpp_rounding)
    : spec_(model::ModelSpec::from_gguf(f)),
      llama_cpp_rounding_(llama_cpp_rounding),
      f16_kv_(llama_cpp_rounding) {
  embd_ = load_matrix(f, weight_name(Weight::TokenEmbd));
  out_norm_ = load_matrix(f, weight_name(Weight::OutputNorm));
  out_ = spec_.tied_embeddings ? embd_ : load_matrix(f, weight_name(Weight::Output));
  dense2_ = load_matrix(f, weight_name(Weight::Dense2), false);
  dense3_ = load_matrix(f, weight_name(Weight::Dense3), false);
  // YaRN and the query temperature straight from the keys, as llama.cpp derives them.
  const std::string a = spec_.arch_name + ".";
  if (f.get_optional<std::string>(a + "rope.scaling.type").value_or("") == "yarn") {
    const float factor = f.get_optional<float>(a + "rope.scaling.factor").value_or(0.f);
    const double n_orig = f.get_optional<uint32_t>(a + "rope.scaling.original_context_length")
                              .value_or(spec_.n_ctx_train);
    const double fast = f.get_optional<float>(a + "rope.scaling.yarn_beta_fast").value_or(32.f);
    const double slow = f.get_optional<float>(a + "rope.scaling.yarn_beta_slow").value_or(1.f);
    const double log_mul =
        f.get_optional<float>(a + "rope.scaling.yarn_log_multiplier").value_or(0.f);
    const double attn_factor = f.get_optional<float>(a + "rope.scaling.attn_factor").value_or(1.f);
    const double n = spec_.rope_dims, base = spec_.rope_freq_base;
    auto corr = [&](double rot) {
      return n * std::log(n_orig / (rot * 2 * std::numbers::pi)) / (2 * std::log(base));
    };
    auto ms = [&](double m) { return factor <= 1 ? 1.0 : 0.1 * m * std::log(factor) + 1.0; };
    yarn_.on = true;
    yarn_.freq_scale = factor > 0 ? 1.f / factor : 1.f;
    yarn_.low = static_cast<float>(std::max(0.0, std::floor(corr(fast))));
    yarn_.high = static_cast<float>(std::min(n - 1, std::ceil(corr(slow))));
    // llama.cpp's attn_factor, then ggml's own (1 + 0.1 ln(1 / freq_scale)) on top.
    const double llama_factor =
        (log_mul != 0 ? ms(1) / ms(log_mul) : ms(1)) / (1 + 0.1 * std::log(factor)) * attn_factor;
    yarn_.mscale = static_cast<float>(llama_factor * (1 + 0.1 * std::log(1.0 / yarn_.freq_scale)));
    yarn_.temp_scale = f.get_optional<float>(a + "attention.temperature_scale").value_or(0.f);
    yarn_.temp_floor = static_cast<uint32_t>(n_orig);
  }
  if (spec_.has_rope_freqs && !yarn_.on) {
    rope_freqs_ = load_matrix(f, weight_name(Weight::RopeFreqs));
  }
  layers_.resize(spec_.n_layer);
  for (uint32_t l = 0; l < spec_.n_layer; ++l) {
    Layer& L = layers_[l];
    auto get = [&](Weight w, bool req = true) { return load_matrix(f, weight_name(w, l), req); };
    L.attn_norm = get(Weight::AttnNorm);
    if (spec_.fused_qkv) {
      L.wqkv = get(Weight::AttnQKV);
    } else {
      L.wq = get(Weight::AttnQ);
      L.wk = get(Weight::AttnK);
      L.wv = get(Weight::AttnV);
    }
    L.wo = get(Weight::AttnOut);
    L.bq = get(Weight::AttnQBias, false);
    L.bk = get(Weight::AttnKBias, false);
    L.bv = get(Weight::AttnVBias, false);
    L.q_norm = get(Weight::AttnQNorm, false);
    L.k_norm = get(Weight::AttnKNorm, false);
    L.post_attn_norm = get(Weight::PostAttnNorm, spec_.post_norms);
    L.ffn_norm = get(spec_.ffn_norm_is_post_attn ? Weight::PostAttnNorm : Weight::FfnNorm);
    L.bo = get(Weight::AttnOutBias, spec_.attn_out_bias);
    L.sinks = get(Weight::AttnSinks, spec_.attn_sinks);
    if (spec_.is_moe()) {
      load_moe(f, l, L);
    } else {
      if (!spec_.fused_gate_up) L.gate = get(Weight::FfnGate);
      L.up = get(Weight::FfnUp);
      L.down = get(Weight::FfnDown);
    }
    L.post_ffn_norm = get(Weight::PostFfnNorm, spec_.post_norms);
  }
  reset();
}

ReferenceModel::ReferenceModel(const gguf::GgufFile& f, EngineRounding)
    : ReferenceModel(f, /*llama_cpp_rounding=*/false) {
  f16_kv_ = true;
}

namespace {
// The activation format llama.cpp's CPU backend converts x to before a dot product with weights
// of type `w` (its "vec_dot_type"); F32 for weights it multiplies in f32.
gguf::TensorType activation_type(gguf::TensorType w) {
  using T = gguf::TensorType;
  switch (w) {
    case T::F16:
      return T::F16;
    case T::BF16:
      return T::BF16;
    case T::Q4_0:
    case T::Q5_0:
    case T::Q8_0:
    case T::IQ4_NL:
    case T::MXFP4:
      return T::Q8_0;
    case T::Q4_1:
    case T::Q5_1:
      return T::Q8_1;
    case T::Q2_K:
    case T::Q3_K:
    case T::Q4_K:
    case T::Q5_K:
    case T::Q6_K:
    case T::IQ4_XS:
      return T::Q8_K;
    default:
      return T::F32;
  }
}

std::vector<float> round_through(gguf::TensorType t, const std::vector<float>& x) {
  if (t == gguf::TensorType::F32) return x;
  std::vector<uint8_t> q(gguf::row_bytes(t, x.size()));
  gguf::quantize(t, x.data(), q.data(), x.size());
  std::vector<float> y(x.size());
  gguf::dequantize(t, q.data(), y.data(), y.size());
  return y;
}
}  // namespace

std::vector<float> ReferenceModel::matvec(const Matrix& m, const std::vector<float>& x_in) const {
  if (x_in.size() != m.cols) throw std::logic_error("reference: matvec shape mismatch");
  const std::vector<float> x =
      llama_cpp_rounding_ ? round_through(activation_type(m.type), x_in) : x_in;
  std::vector<float> y(m.rows);
  for (uint32_t r = 0; r < m.rows; ++r) {
    double acc = 0;
    const float* row = m.w.data() + size_t{r} * m.cols;
    for (uint32_t c = 0; c < m.cols; ++c) acc += double(row[c]) * x[c];
    y[r] = static_cast<float>(acc);
  }
  return y;
}

std::vector<float> ReferenceModel::rms_norm(const std::vector<float>& x, const Matrix& w,
                                            size_t offset, size_t n) const {
  if (n == 0) n = x.size();
  double ss = 0;
  for (size_t i = 0; i < n; ++i) ss += double(x[offset + i]) * x[offset + i];
  const double scale = 1.0 / std::sqrt(ss / double(n) + spec_.norm_eps);
  std::vector<float> y(n);
  for (size_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[offset + i] * scale * w.w[i]);
  return y;
}

void ReferenceModel::rope(std::vector<float>& v, uint32_t n_heads, uint32_t pos, bool swa) const {
  const uint32_t d = spec_.head_dim, n_rot = spec_.rope_dims;
  const double base = swa ? spec_.rope_freq_base_swa : spec_.rope_freq_base;
  const double scale = swa ? spec_.rope_freq_scale_swa : spec_.rope_freq_scale;
  for (uint32_t h = 0; h < n_heads; ++h) {
    float* head = v.data() + size_t{h} * d;
    for (uint32_t i = 0; i < n_rot / 2; ++i) {
      double theta = pos * std::pow(base, -2.0 * i / n_rot) * scale;
      if (!rope_freqs_.empty()) theta /= rope_freqs_.w[i];
      double mscale = 1.0;
      if (yarn_.on) {  // blend of interpolated and original angle, ggml's rope_yarn
        const double extrap = theta, interp = yarn_.freq_scale * extrap;
        const double y = (i - yarn_.low) / std::max(0.001, double(yarn_.high - yarn_.low));
        const double ramp = 1 - std::clamp(y, 0.0, 1.0);
        theta = interp * (1 - ramp) + extrap * ramp;
        mscale = yarn_.mscale;
      }
      const double c = std::cos(theta) * mscale, s = std::sin(theta) * mscale;
      const uint32_t a = spec_.rope_ordering == model::RopeOrdering::NeoX ? i : 2 * i;
      const uint32_t b =
          spec_.rope_ordering == model::RopeOrdering::NeoX ? i + n_rot / 2 : 2 * i + 1;
      const double x0 = head[a], x1 = head[b];
      head[a] = static_cast<float>(x0 * c - x1 * s);
      head[b] = static_cast<float>(x0 * s + x1 * c);
    }
  }
}

namespace {
void add_bias(std::vector<float>& v, const std::vector<float>& b) {
  if (b.empty()) return;
  for (size_t i = 0; i < v.size(); ++i) v[i] += b[i];
}
double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}
}  // namespace

std::vector<float> ReferenceModel::token_embedding(int32_t token) const {
  if (token < 0 || static_cast<uint32_t>(token) >= embd_.rows) {
    throw std::out_of_range("reference: token id out of range");
  }
  std::vector<float> x(embd_.w.begin() + size_t(token) * spec_.n_embd,
                       embd_.w.begin() + size_t(token + 1) * spec_.n_embd);
  for (auto& e : x) e *= spec_.embed_scale;
  return x;
}

std::vector<float> ReferenceModel::layer_qkv(uint32_t l, const std::vector<float>& x,
                                             uint32_t pos) {
  const auto& s = spec_;
  const uint32_t q_dim = s.n_embd_q(), kv_dim = s.n_embd_k_gqa();
  Layer& L = layers_[l];
  const bool swa = s.layer_is_swa[l];
  auto h = rms_norm(x, L.attn_norm);
  std::vector<float> q, k, v;
  if (s.fused_qkv) {
    auto qkv = matvec(L.wqkv, h);
    q.assign(qkv.begin(), qkv.begin() + q_dim);
    k.assign(qkv.begin() + q_dim, qkv.begin() + q_dim + kv_dim);
    v.assign(qkv.begin() + q_dim + kv_dim, qkv.end());
  } else {
    q = matvec(L.wq, h);
    k = matvec(L.wk, h);
    v = matvec(L.wv, h);
  }
  add_bias(q, L.bq.w);
  add_bias(k, L.bk.w);
  add_bias(v, L.bv.w);
  if (!L.q_norm.empty()) {
    for (uint32_t hd = 0; hd < s.n_head; ++hd) {
      auto n = rms_norm(q, L.q_norm, size_t{hd} * s.head_dim, s.head_dim);
      std::copy(n.begin(), n.end(), q.begin() + size_t{hd} * s.head_dim);
    }
    for (uint32_t hd = 0; hd < s.n_head_kv; ++hd) {
      auto n = rms_norm(k, L.k_norm, size_t{hd} * s.head_dim, s.head_dim);
      std::copy(n.begin(), n.end(), k.begin() + size_t{hd} * s.head_dim);
    }
  }
  rope(q, s.n_head, pos, swa);
  rope(k, s.n_head_kv, pos, swa);
  if (yarn_.temp_scale != 0) {  // llama.cpp's attention temperature of this query's position
    const double t =
        std::log(std::floor(double(pos) / yarn_.temp_floor) + 1.0) * yarn_.temp_scale + 1.0;
    for (auto& e : q) e = static_cast<float>(e * t);
  }
  if (f16_kv_) {  // the KV cache holds f16
    k = round_through(gguf::TensorType::F16, k);
    v = round_through(gguf::TensorType::F16, v);
  }
  auto& cache = layers_cache_[l];
  cache.k.push_back(k);
  cache.v.push_back(v);
  return q;
}

std::vector<float> ReferenceModel::attend(uint32_t l, const std::vector<float>& q,
                                          uint32_t pos) const {
  const auto& s = spec_;
  const bool swa = s.layer_is_swa[l] && s.sliding_window > 0;
  const auto& cache = layers_cache_[l];
  // YaRN's magnitude is in the rotated Q and K here; the spec folds it into attn_scale.
  const double scale =
      yarn_.on ? s.attn_scale / (double(s.yarn_mscale) * s.yarn_mscale) : double(s.attn_scale);
  std::vector<float> attn(size_t{s.n_head} * s.head_dim_v, 0.0f);
  const uint32_t group = s.n_head / s.n_head_kv;
  const auto n_keys = static_cast<uint32_t>(cache.k.size());
  for (uint32_t hd = 0; hd < s.n_head; ++hd) {
    const uint32_t kvh = hd / group;
    std::vector<double> scores;
    std::vector<uint32_t> used;
    for (uint32_t p = 0; p < (s.causal_attn ? pos + 1 : n_keys); ++p) {
      if (swa && s.causal_attn && pos - p >= s.sliding_window) continue;
      // llama.cpp's symmetric window: |pos - p| <= n_swa / 2.
      const uint32_t dist = pos > p ? pos - p : p - pos;
      if (swa && !s.causal_attn && dist > s.sliding_window / 2) continue;
      double dot = 0;
      for (uint32_t i = 0; i < s.head_dim; ++i) {
        dot += double(q[size_t{hd} * s.head_dim + i]) * cache.k[p][size_t{kvh} * s.head_dim + i];
      }
      dot *= scale;
      if (s.attn_softcap > 0) dot = s.attn_softcap * std::tanh(dot / s.attn_softcap);
      scores.push_back(dot);
      used.push_back(p);
    }
    double mx = -INFINITY, sum = 0;
    for (double sc : scores) mx = std::max(mx, sc);
    // An attention sink: one more logit in the denominator, with no value.
    const bool sink = !layers_[l].sinks.w.empty();
    if (sink) mx = std::max(mx, double(layers_[l].sinks.w[hd]));
    for (double& sc : scores) sum += sc = std::exp(sc - mx);
    if (sink) sum += std::exp(double(layers_[l].sinks.w[hd]) - mx);
    for (size_t j = 0; j < used.size(); ++j) {
      const double w = scores[j] / sum;
      for (uint32_t i = 0; i < s.head_dim_v; ++i) {
        attn[size_t{hd} * s.head_dim_v + i] +=
            static_cast<float>(w * cache.v[used[j]][size_t{kvh} * s.head_dim_v + i]);
      }
    }
  }
  return attn;
}

void ReferenceModel::layer_rest(uint32_t l, std::vector<float>& x,
                                const std::vector<float>& attn) const {
  const auto& s = spec_;
  const Layer& L = layers_[l];
  auto o = matvec(L.wo, attn);
  for (size_t i = 0; i < L.bo.w.size(); ++i) o[i] += L.bo.w[i];
  if (s.post_norms) o = rms_norm(o, L.post_attn_norm);
  for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];

  const auto h = rms_norm(x, L.ffn_norm);
  auto d = ffn(L, h);
  if (s.post_norms) d = rms_norm(d, L.post_ffn_norm);
  for (size_t i = 0; i < x.size(); ++i) x[i] += d[i];
}

std::vector<float> ReferenceModel::forward_one(int32_t token, uint32_t pos, bool want_logits) {
  const auto& s = spec_;
  std::vector<float> x = token_embedding(token);
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    const auto q = layer_qkv(l, x, pos);
    layer_rest(l, x, attend(l, q, pos));
  }
  if (!want_logits) return {};
  if (hidden_out_) return rms_norm(x, out_norm_);
  auto logits = matvec(out_, rms_norm(x, out_norm_));
  if (s.final_softcap > 0) {
    for (auto& z : logits) z = static_cast<float>(s.final_softcap * std::tanh(z / s.final_softcap));
  }
  return logits;
}

std::vector<float> ReferenceModel::ffn(const Layer& L, const std::vector<float>& h) const {
  if (spec_.is_moe()) return moe(L, h);
  const auto& s = spec_;
  std::vector<float> g, u;
  if (s.fused_gate_up) {
    auto gu = matvec(L.up, h);
    g.assign(gu.begin(), gu.begin() + s.n_ff);
    u.assign(gu.begin() + s.n_ff, gu.end());
  } else {
    g = matvec(L.gate, h);
    u = matvec(L.up, h);
  }
  for (size_t i = 0; i < g.size(); ++i) {
    const double a =
        s.activation == model::Activation::SiLU ? g[i] / (1.0 + std::exp(-g[i])) : gelu_tanh(g[i]);
    g[i] = static_cast<float>(a * u[i]);
  }
  return matvec(L.down, g);
}

std::vector<float> ReferenceModel::embed(std::span<const int32_t> tokens) {
  reset();
  const auto& s = spec_;
  std::vector<std::vector<float>> xs;
  for (int32_t t : tokens) xs.push_back(token_embedding(t));
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    // Every token's K and V first: a non-causal query sees them all.
    std::vector<std::vector<float>> qs;
    for (uint32_t p = 0; p < xs.size(); ++p) qs.push_back(layer_qkv(l, xs[p], p));
    for (uint32_t p = 0; p < xs.size(); ++p) layer_rest(l, xs[p], attend(l, qs[p], p));
  }
  std::vector<std::vector<float>> rows;
  for (const auto& x : xs) rows.push_back(rms_norm(x, out_norm_));
  std::vector<float> pooled;
  switch (s.pooling) {
    case model::Pooling::Mean: {
      std::vector<double> acc(s.n_embd, 0.0);
      for (const auto& r : rows)
        for (uint32_t i = 0; i < s.n_embd; ++i) acc[i] += r[i];
      for (double a : acc) pooled.push_back(static_cast<float>(a / double(rows.size())));
      break;
    }
    case model::Pooling::Cls:
      pooled = rows.front();
      break;
    case model::Pooling::Last:
      pooled = rows.back();
      break;
    default:
      throw std::runtime_error("reference: embed() pools mean, cls or last");
  }
  if (!dense2_.empty()) pooled = matvec(dense3_, matvec(dense2_, pooled));
  reset();
  return pooled;
}

std::vector<std::vector<float>> ReferenceModel::forward(std::span<const int32_t> tokens,
                                                        bool all_rows) {
  std::vector<std::vector<float>> out;
  route_gaps_.clear();
  for (size_t i = 0; i < tokens.size(); ++i) {
    route_gaps_.emplace_back();
    const bool last = i + 1 == tokens.size();
    auto row = forward_one(tokens[i], n_past_++, all_rows || last);
    if (all_rows || last) out.push_back(std::move(row));
  }
  return out;
}

std::vector<std::vector<float>> ReferenceModel::hidden_states(std::span<const int32_t> tokens) {
  hidden_out_ = true;
  auto rows = forward(tokens, /*all_rows=*/true);
  hidden_out_ = false;
  return rows;
}

}  // namespace vkllm::reference
