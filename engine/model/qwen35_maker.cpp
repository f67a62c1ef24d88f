#include "engine/model/qwen35_maker.h"

#include <algorithm>
#include <string>
#include <vector>

#include "engine/model/weight_names.h"

namespace vkllm::model {

namespace {

constexpr uint32_t kQwen35ConvKernel = 4;
constexpr uint32_t kQwen35MaxLinearHead = 128;
constexpr uint32_t kQwen35AttentionInterval = 4;
constexpr float kQwen35RopeBase = 10000000.0f;
constexpr float kQwen35Decay = -0.1f;
// The router reads an RMS-normed input: N(0, 1/E) weights give logits of std about 1, where a
// trained router's are decisive; std 4 keeps quantization noise from flipping top-k choices.
constexpr float kRouterScale = 4.0f;

}  // namespace

void build_qwen35_model(const MakeModelOptions& o, const gguf::GgufFile& vocab,
                        gguf::GgufWriter& w) {
  const ModelShape& s = o.shape;
  check_decoder_shape(s, 8);
  const uint64_t n_vocab = vocab_token_count(vocab);
  const std::string arch = o.arch;  // qwen35, qwen35moe or qwen3next
  const bool moe = arch != "qwen35", next = arch == "qwen3next";
  const std::string p = arch + ".";
  const uint32_t L = s.n_layer;
  const uint32_t interval = L >= kQwen35AttentionInterval ? kQwen35AttentionInterval : 2;
  const uint32_t lin_hd = std::min(s.head_dim, kQwen35MaxLinearHead);
  const uint32_t nk = s.n_head, nv = 2 * s.n_head;
  const uint32_t n_rot = s.head_dim / 4;
  const uint32_t pairs = n_rot / 2;
  // Experts: the shape's, else 8 of n_ff / 2, 2 per token; the shared expert as wide as one.
  const uint32_t n_exp = s.n_expert ? s.n_expert : 8,
                 n_used = s.n_expert_used ? s.n_expert_used : 2;
  const uint32_t ffe = s.n_ff_exp ? s.n_ff_exp : std::max(32u, s.n_ff / 2 / 32 * 32);
  const uint32_t ffs = s.n_ff_shexp ? s.n_ff_shexp : ffe;
  // Qwen3.5's [11, 11, 10, 0] for 32 rotated pairs, in proportion.
  const std::vector<int32_t> sections{static_cast<int32_t>((pairs + 2) / 3),
                                      static_cast<int32_t>((pairs + 1) / 3),
                                      static_cast<int32_t>(pairs / 3), 0};
  w.set_string("general.architecture", arch);
  w.set_string("general.name", "vkllm random " + arch);
  w.set_u32("general.file_type", static_cast<uint32_t>(o.file_type));
  if (is_quantized(o.file_type)) w.set_u32("general.quantization_version", 2);
  w.set_u32(p + "context_length", s.n_ctx);
  w.set_u32(p + "embedding_length", s.n_embd);
  if (o.nextn_layers > 1) throw std::invalid_argument("make-model: at most one --mtp block");
  w.set_u32(p + "block_count", L + o.nextn_layers);
  if (o.nextn_layers > 0) w.set_u32(p + "nextn_predict_layers", o.nextn_layers);
  w.set_u32(p + "feed_forward_length", s.n_ff);
  w.set_u32(p + "attention.head_count", s.n_head);
  w.set_u32(p + "attention.head_count_kv", s.n_head_kv);
  w.set_u32(p + "attention.key_length", s.head_dim);
  w.set_u32(p + "attention.value_length", s.head_dim);
  w.set_f32(p + "attention.layer_norm_rms_epsilon", 1e-6f);
  w.set_f32(p + "rope.freq_base", s.rope_freq_base > 0 ? s.rope_freq_base : kQwen35RopeBase);
  w.set_u32(p + "rope.dimension_count", n_rot);
  // Qwen3-Next rotates with plain NeoX RoPE (no sections).
  if (!next) w.set_i32s(p + "rope.dimension_sections", sections);
  w.set_u32(p + "ssm.conv_kernel", kQwen35ConvKernel);
  w.set_u32(p + "ssm.state_size", lin_hd);
  w.set_u32(p + "ssm.group_count", nk);
  w.set_u32(p + "ssm.time_step_rank", nv);
  w.set_u32(p + "ssm.inner_size", nv * lin_hd);
  w.set_u32(p + "full_attention_interval", interval);
  if (moe) {
    if (n_used > n_exp)
      throw std::invalid_argument("make-model: more experts per token than experts");
    w.set_u32(p + "expert_count", n_exp);
    w.set_u32(p + "expert_used_count", n_used);
    w.set_u32(p + "expert_feed_forward_length", ffe);
    w.set_u32(p + "expert_shared_feed_forward_length", ffs);
  }
  w.set_u32(p + "vocab_size", static_cast<uint32_t>(n_vocab));
  w.copy_metadata(vocab, "tokenizer.");

  const uint64_t E = s.n_embd, qd = uint64_t{s.n_head} * s.head_dim,
                 kv = uint64_t{s.n_head_kv} * s.head_dim, hd = s.head_dim, ff = s.n_ff;
  const uint64_t key_dim = uint64_t{nk} * lin_hd, vd = uint64_t{nv} * lin_hd;
  const uint64_t C = 2 * key_dim + vd;
  const bool has_output = !s.tied_embeddings;
  auto add = [&](Weight wt, uint32_t layer, std::vector<uint64_t> shape, bool norm = false,
                 float scale = 1.0f) {
    add_random_tensor(w, o, weight_name(wt, layer), std::move(shape), norm, layer, has_output,
                      scale);
  };
  add(Weight::TokenEmbd, 0, {E, n_vocab});
  auto add_ffn = [&](uint32_t l) {
    if (moe) {
      add(Weight::FfnGateInp, l, {E, n_exp}, false, kRouterScale);
      add(Weight::FfnGateExps, l, {E, ffe, n_exp});
      add(Weight::FfnUpExps, l, {E, ffe, n_exp});
      add(Weight::FfnDownExps, l, {ffe, E, n_exp});
      add(Weight::FfnGateInpShexp, l, {E});
      add(Weight::FfnGateShexp, l, {E, ffs});
      add(Weight::FfnUpShexp, l, {E, ffs});
      add(Weight::FfnDownShexp, l, {ffs, E});
    } else {
      add(Weight::FfnGate, l, {E, ff});
      add(Weight::FfnUp, l, {E, ff});
      add(Weight::FfnDown, l, {ff, E});
    }
  };
  auto add_attention = [&](uint32_t l) {
    add(Weight::AttnQ, l, {E, 2 * qd});
    add(Weight::AttnK, l, {E, kv});
    add(Weight::AttnV, l, {E, kv});
    add(Weight::AttnQNorm, l, {hd}, true);
    add(Weight::AttnKNorm, l, {hd}, true);
    add(Weight::AttnOut, l, {qd, E});
  };
  for (uint32_t l = 0; l < L; ++l) {
    add(Weight::AttnNorm, l, {E}, true);
    if ((l + 1) % interval != 0) {
      add(Weight::AttnQKV, l, {E, C});
      add(Weight::AttnGate, l, {E, vd});
      add(Weight::SsmConv1d, l, {kQwen35ConvKernel, C});
      add(Weight::SsmDt, l, {nv}, true);
      add(Weight::SsmA, l, {nv}, true, kQwen35Decay);
      if (next) {
        add(Weight::SsmBetaAlpha, l, {E, 2 * uint64_t{nv}});
      } else {
        add(Weight::SsmAlpha, l, {E, nv});
        add(Weight::SsmBeta, l, {E, nv});
      }
      add(Weight::SsmNorm, l, {lin_hd}, true);
      add(Weight::SsmOut, l, {vd, E});
    } else {
      add_attention(l);
    }
    add(Weight::PostAttnNorm, l, {E}, true);
    add_ffn(l);
  }
  add(Weight::OutputNorm, 0, {E}, true);
  if (has_output) add(Weight::Output, 0, {E, n_vocab});
  // The NextN block (llama.cpp's load_block_mtp): a gated attention layer and an FFN as the
  // decoder's, fed the projection of [enorm(embedding) | hnorm(hidden)], with its own output norm
  // (the embeddings and the LM head are the model's).
  for (uint32_t l = L; l < L + o.nextn_layers; ++l) {
    add(Weight::AttnNorm, l, {E}, true);
    add_attention(l);
    add(Weight::PostAttnNorm, l, {E}, true);
    add_ffn(l);
    add(Weight::NextnEhProj, l, {2 * E, E});
    add(Weight::NextnEnorm, l, {E}, true);
    add(Weight::NextnHnorm, l, {E}, true);
    add(Weight::NextnSharedHeadNorm, l, {E}, true);
  }
}

}  // namespace vkllm::model
