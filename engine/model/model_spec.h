// What the forward pass needs to know about a model, read from GGUF metadata: sizes, attention
// layout, RoPE, normalisation and activation choices for each supported architecture, and the
// GGUF tensor names of its weights (weight_names.h). Unsupported architectures fail here, at
// load, with a clear message.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"

namespace vkllm::model {

enum class Arch {
  Llama,
  Qwen2,
  Qwen3,
  Qwen3Moe,
  Qwen2Moe,
  GptOss,
  Gemma2,
  Gemma3,
  Phi3,
  Mistral3,
  Bert,
  NomicBert,
  GemmaEmbedding,
  Lfm2,
  Gemma3n,
  Gemma4,
  Qwen35,
  Qwen35Moe,
  Qwen3Next,
  GraniteHybrid,
  NemotronH,
  NemotronHMoe,
  Llama4,
  Qwen2Vl,
  Qwen3Vl,
};
enum class RopeOrdering { Normal, NeoX };  // rotate pairs (2i, 2i+1) vs (i, i + dims/2)
// SwigluOai: gpt-oss's clamped SwiGLU, out = g * sigmoid(1.702 g) * (u + 1) with the gate g
// clamped above at 7 and the up value u to [-7, 7] (ggml's swiglu_oai).
enum class Activation { SiLU, GeluTanh, SwigluOai };
// How the router's logits become expert weights: Softmax over all experts, then the top k
// (qwen3moe); SoftmaxTopK: the top k logits, then a softmax over those k (gpt-oss, llama.cpp's
// SOFTMAX_WEIGHT gating); Sigmoid: the top k logits, each weighted by its sigmoid, not
// renormalised (Llama 4); SigmoidScores: each expert's score is the sigmoid of its logit, the k
// best of score + ffn_exp_probs_b (moe_select_bias) are chosen and weighted by their unbiased
// scores (DeepSeek V3's routing, Nemotron-H MoE's).
enum class MoeGating { Softmax, SoftmaxTopK, Sigmoid, SigmoidScores };
// How an embedding is made of the hidden states of an input's tokens (llama.cpp's
// <arch>.pooling_type values). Rank: the first token through a cross-encoder's classification head.
enum class Pooling : uint32_t { None = 0, Mean = 1, Cls = 2, Last = 3, Rank = 4 };

// The longest short convolution the kernels take (LFM2 uses 3).
inline constexpr uint32_t kMaxShortConvLength = 8;
// The widest Gated DeltaNet head the kernels take (Qwen3.5 uses 128).
inline constexpr uint32_t kMaxDeltaNetHeadDim = 256;
// The largest Mamba-2 state size (d_state) the scan kernels take (Granite 4.0-H, Nemotron-H: 128).
inline constexpr uint32_t kMaxMambaStateSize = 256;

struct ModelSpec {
  Arch arch = Arch::Llama;
  std::string arch_name;  // general.architecture

  uint32_t n_layer = 0;
  uint32_t n_embd = 0;
  uint32_t n_head = 0;
  uint32_t n_head_kv = 0;
  uint32_t head_dim = 0;  // key/query head size
  uint32_t head_dim_v = 0;
  uint32_t n_ff = 0;
  uint32_t n_vocab = 0;
  uint32_t n_ctx_train = 0;
  float norm_eps = 1e-5f;

  RopeOrdering rope_ordering = RopeOrdering::Normal;
  uint32_t rope_dims = 0;  // leading dimensions of each head that are rotated
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;  // 1 / linear scaling factor
  // Layers using a sliding window may use their own base (gemma3: 10000 locally).
  float rope_freq_base_swa = 10000.0f;
  float rope_freq_scale_swa = 1.0f;
  bool has_rope_freqs = false;  // per-dimension factors tensor (Llama 3.1 scaling, or YaRN's)
  // Qwen2-VL's multi-section RoPE (qwen2vl's rope.dimension_sections): consecutive runs of the
  // rotated pairs turned by a token's temporal, height, width and fourth position. A text token
  // has the same position in all four (llama.cpp broadcasts it), which makes the rotation NeoX's
  // over the rotated dimensions; image tokens' grid positions are what the sections are for.
  std::array<uint32_t, 4> mrope_sections{};
  // Qwen3-VL's interleaved M-RoPE (llama.cpp's imrope): pair i turns by h when i % 3 == 1 and
  // i < 3 * sections[1], by w when i % 3 == 2 and i < 3 * sections[2], else by t, instead of the
  // consecutive runs above (pairs i % sum(sections) as there).
  bool mrope_interleaved = false;
  // Qwen3-VL's deepstack: an image row's input is n_embd * (1 + n_deepstack) floats, the first
  // n_embd its embedding, slice i + 1 added to the residual stream after layer i < n_deepstack
  // (text tokens add nothing: llama.cpp pads their embeddings with zeros).
  uint32_t n_deepstack = 0;
  // Floats per row of an injected (image) input: n_embd, wider with deepstack slices.
  uint32_t n_embd_inp() const { return n_embd * (1 + n_deepstack); }
  // YaRN (rope.scaling.type yarn), as ggml applies it with ext_factor 1: pair i's angle blends
  // the interpolated (freq_scale) and the original frequency by a ramp over the pairs between
  // the beta_fast and beta_slow correction dimensions. That is one divisor per pair, which the
  // models serve as the rope_freqs weight (rope_freq_scale is then 1), so every RoPE kernel runs
  // it unchanged. Its magnitude factor (mscale) multiplies the cos and sin of both Q and K, i.e.
  // their scores by mscale^2: folded into attn_scale (YaRN needs rope_dims == head_dim).
  std::vector<float> yarn_freq_factors;  // rope_dims / 2 divisors; empty: no YaRN
  float yarn_mscale = 1.0f;
  // Attention temperature tuning (mistral3's attention.temperature_scale, Llama 4's): the query
  // of the token at position p is multiplied by 1 + scale * ln(floor(p / floor) + 1) (llama.cpp:
  // floor = the YaRN original context), so it is 1 below `floor` tokens. 0: off. Llama 4 counts
  // from position + 1 (attn_temp_offset) and scales only its NoPE layers' queries.
  float attn_temp_scale = 0.0f;
  uint32_t attn_temp_floor = 0;
  uint32_t attn_temp_offset = 0;

  float attn_scale = 0.0f;      // multiplies QK^T; 1/sqrt(head_dim) unless the arch says otherwise
  float attn_softcap = 0.0f;    // 0: none; else logits = c * tanh(logits / c)
  float final_softcap = 0.0f;   // likewise on the output logits
  uint32_t sliding_window = 0;  // 0: none
  std::vector<bool> layer_is_swa;  // per layer: uses the sliding window (or attn_chunk)
  // Llama 4's iRoPE (llama4_spec.h): the layer_is_swa layers attend in chunks instead of a
  // sliding window, a query at position p seeing the keys from floor(p / attn_chunk) *
  // attn_chunk to p (0: no chunks); layer_nope layers skip RoPE (empty: none does); on the RoPE
  // layers Q and K are RMS-normed per head without a weight when kq_plain_norm.
  uint32_t attn_chunk = 0;
  std::vector<bool> layer_nope;
  bool kq_plain_norm = false;
  bool is_nope(uint32_t l) const { return l < layer_nope.size() && layer_nope[l]; }

  float embed_scale = 1.0f;  // token embeddings are multiplied by this (gemma: sqrt(n_embd))
  Activation activation = Activation::SiLU;
  bool qkv_bias = false;         // attn_q/k/v.bias (qwen2)
  bool qk_norm = false;          // attn_q_norm / attn_k_norm RMSNorm per head (qwen3, gemma3)
  bool post_norms = false;       // post_attention_norm / post_ffw_norm (gemma2/3)
  bool fused_qkv = false;        // attn_qkv (phi3)
  bool fused_gate_up = false;    // ffn_up holds gate and up stacked (phi3)
  bool tied_embeddings = false;  // no output.weight: the embedding matrix projects to logits
  bool attn_out_bias = false;    // attn_output.bias after the output projection (gpt-oss)
  // gpt-oss: per query head, a learned logit (attn_sinks.weight) that joins the softmax's
  // denominator and contributes no value: out = sum_k e^{s_k} v_k / (sum_k e^{s_k} + e^{sink}).
  bool attn_sinks = false;
  // The weight of the RMSNorm before the FFN: ffn_norm, or gpt-oss's post_attention_norm.
  bool ffn_norm_is_post_attn = false;

  // Embedding models. Encoders (bert, nomic-bert) are post-norm: LayerNorm (with bias) after each
  // residual add, token-type embeddings (row 0: every token is "sentence A", as in llama.cpp) and
  // a LayerNorm on the embeddings; they have no LM head.
  bool causal_attn = true;          // <arch>.attention.causal
  Pooling pooling = Pooling::None;  // <arch>.pooling_type
  bool has_pooling_type = false;    // the key is present: an embedding model (Ollama's rule)
  bool rope = true;                 // bert: learned absolute positions instead
  bool position_embd = false;       // position_embd.weight added to the token embeddings
  bool gated_ffn = true;            // bert: up (+bias) -> GELU -> down (+bias), no gate
  uint32_t n_token_types = 0;       // rows of token_types.weight
  bool cls_dense = false;           // rank head: cls.weight/bias then tanh before cls.output
  uint32_t n_cls_out = 0;           // rank head outputs (rows of cls.output.weight)
  // EmbeddingGemma: the width of its dense projections after pooling (dense_2: n_embd -> n_dense,
  // dense_3: n_dense -> n_embd); 0: none.
  uint32_t n_dense = 0;
  // Whole inputs per step with non-causal attention (encoder.h): bert-family models, and
  // EmbeddingGemma, whose layers are Gemma 3's (decoder_layers()) with a symmetric window.
  bool is_encoder() const {
    return arch == Arch::Bert || arch == Arch::NomicBert || arch == Arch::GemmaEmbedding;
  }
  // An encoder built of pre-norm decoder layers (runtime::Forward's) rather than post-norm ones.
  bool decoder_layers() const { return arch == Arch::GemmaEmbedding; }
  // Floats per row of an encoder step's Logits: its pooled outputs and what the pooled rows pass
  // through on the way (the dense projection; bert-family encoders size it for the vocabulary).
  uint32_t encoder_rows_width() const {
    const uint32_t w = std::max(n_embd_out(), n_dense);
    return decoder_layers() ? w : std::max(w, n_vocab);
  }
  // Length of one pooled output: the classification head's for rank pooling, else n_embd.
  uint32_t n_embd_out() const { return pooling == Pooling::Rank ? n_cls_out : n_embd; }

  // Mixture-of-experts feed-forward (n_expert > 0; qwen3moe): each token's router logits
  // (ffn_gate_inp) go through a softmax, the n_expert_used most probable experts run (ties: the
  // lower expert index first, as ggml's top-k MoE kernels), their weights renormalised to sum 1
  // when moe_norm_weights, and the token's output is the weighted sum of those experts' SwiGLU
  // FFNs of width n_ff_exp (ffn_gate_exps / ffn_up_exps / ffn_down_exps).
  uint32_t n_expert = 0;
  uint32_t n_expert_used = 0;
  uint32_t n_ff_exp = 0;
  bool moe_norm_weights = false;
  MoeGating moe_gating = MoeGating::Softmax;
  // gpt-oss: ffn_gate_inp.bias is added to the router logits and the experts' gate/up/down
  // outputs get their expert's row of ffn_{gate,up,down}_exps.bias.
  bool moe_biases = false;
  // A shared expert (n_ff_shexp > 0: Qwen2-MoE, Qwen3.5-MoE, Qwen3-Next, Granite 4.0-H MoE,
  // Llama 4): a dense SwiGLU FFN of width n_ff_shexp (ffn_{gate,up,down}_shexp) on the routed
  // experts' input, its output added to theirs; when moe_shexp_gated, first multiplied per token
  // by sigmoid(ffn_gate_inp_shexp . x).
  uint32_t n_ff_shexp = 0;
  bool moe_shexp_gated = false;
  // Llama 4: each selected expert's input, rather than its output, is multiplied by its weight
  // (llama.cpp's weight-before-FFN), and only the layer_is_moe layers are MoE (empty: all when
  // n_expert > 0); the others have a dense FFN of width n_ff.
  bool moe_weight_before_ffn = false;
  std::vector<bool> layer_is_moe;
  // Nemotron-H MoE: the selection bias of SigmoidScores routing (exp_probs_b.bias), every routed
  // weight multiplied by moe_weights_scale after renormalisation (expert_weights_scale), and
  // experts and shared expert without a gate: down(relu(up x)^2) (moe_up_only).
  bool moe_select_bias = false;
  float moe_weights_scale = 1.0f;
  bool moe_up_only = false;
  // Nemotron 3 Super (moe_latent_size): the experts work in a latent width, their input
  // ffn_latent_down x (n_embd -> moe_latent), their weighted sum taken back by ffn_latent_up
  // (moe_latent -> n_embd); the router and the shared expert read x itself. 0: none.
  uint32_t moe_latent = 0;
  // The width the experts read and write: moe_latent, else n_embd.
  uint32_t moe_expert_embd() const { return moe_latent ? moe_latent : n_embd; }
  bool is_moe() const { return n_expert > 0; }
  bool is_moe_layer(uint32_t l) const {
    return is_moe() && (layer_is_moe.empty() || (l < layer_is_moe.size() && layer_is_moe[l]));
  }
  // Floats per token of the FFN activation buffers (Gate, Up, FfnAct): n_ff, or for a MoE model
  // where wider n_expert_used rows of n_ff_exp (one per selected expert), the router's logits or
  // the shared expert's width.
  uint32_t ffn_act_width() const {
    if (!is_moe()) return n_ff;
    return std::max({n_ff, n_expert_used * n_ff_exp, n_expert, n_ff_shexp});
  }

  // Hybrid models: layers whose memory is a fixed-size recurrent state per sequence instead of
  // K/V in the paged cache (kv::StateLayout). LFM2: the layers whose head_count_kv is 0 are
  // gated short convolutions (Forward::short_conv_block) of kernel length shortconv_l_cache,
  // whose state is the last shortconv_l_cache - 1 inputs ((L-1) x n_embd floats).
  std::vector<bool> layer_is_recurrent;
  uint32_t shortconv_l_cache = 0;
  bool is_recurrent(uint32_t layer) const {
    return layer < layer_is_recurrent.size() && layer_is_recurrent[layer];
  }
  // Whether the model rotates by per-token (t, h, w) positions (mrope_sections): its image
  // tokens take grid positions (runner.h SequenceStep::rope_positions).
  bool uses_mrope() const {
    return mrope_sections[0] + mrope_sections[1] + mrope_sections[2] + mrope_sections[3] > 0;
  }
  // Whether any layer keeps a recurrent state. Such a state exists only for the tokens a
  // sequence computed, from its first one: no prefix reuse, no speculation (model_spec.cpp).
  bool has_recurrent_state() const {
    return std::find(layer_is_recurrent.begin(), layer_is_recurrent.end(), true) !=
           layer_is_recurrent.end();
  }
  // Qwen3.5 (qwen35_spec.h): the recurrent layers are Gated DeltaNet linear attention with
  // ssm_n_k_heads query/key heads and ssm_n_v_heads value heads, all ssm_head_dim wide, after a
  // causal conv of ssm_conv_kernel taps over their fused Q|K|V channels; the attention layers
  // gate their output (attn_output_gate: sigmoid of a per-head gate interleaved with Q).
  uint32_t ssm_conv_kernel = 0;
  uint32_t ssm_head_dim = 0;
  uint32_t ssm_n_k_heads = 0;
  uint32_t ssm_n_v_heads = 0;
  bool attn_output_gate = false;
  // Qwen3-Next: value head h reads query/key head h / (n_v / n_k) (its value heads grouped by key
  // head, where Qwen3.5 tiles them: h % n_k), and its beta and alpha come from one projection
  // (ssm_ba: per key head, its value heads' betas, then their alphas).
  bool ssm_grouped_heads = false;
  // Multi-token prediction (nextn_head.h): the file's NextN blocks after the decoder's layers
  // (the decoder runs without them), and whether this is such a block viewed as a model of its
  // own (its step's tokens each come with the model's hidden state before them).
  uint32_t n_nextn = 0;
  bool nextn_head = false;
  bool is_delta_net() const { return ssm_n_v_heads > 0; }
  uint32_t ssm_key_dim() const { return ssm_head_dim * ssm_n_k_heads; }
  uint32_t ssm_value_dim() const { return ssm_head_dim * ssm_n_v_heads; }
  uint32_t ssm_conv_channels() const { return 2 * ssm_key_dim() + ssm_value_dim(); }
  // A DeltaNet layer's state: the conv's last kernel - 1 inputs, then one head_dim x head_dim
  // delta-rule matrix per value head.
  uint64_t ssm_conv_state_floats() const {
    return uint64_t(ssm_conv_kernel - 1) * ssm_conv_channels();
  }
  uint64_t delta_net_state_floats() const {
    return ssm_conv_state_floats() + uint64_t(ssm_n_v_heads) * ssm_head_dim * ssm_head_dim;
  }

  // Where a DeltaNet layer's per-token parts sit in its QKV activation row (runtime's
  // qwen35_forward.h): the projected Q|K|V, z, alpha, beta, and the conv's output, each at a
  // multiple of 64 floats (any storage-buffer offset alignment); width is the row's stride.
  struct DeltaNetRow {
    uint32_t z = 0, alpha = 0, beta = 0, conv = 0, width = 0;
  };
  DeltaNetRow delta_net_row() const {
    auto pad = [](uint32_t n) { return (n + 63) / 64 * 64; };
    DeltaNetRow r;
    r.z = pad(ssm_conv_channels());
    r.alpha = r.z + pad(ssm_value_dim());
    r.beta = r.alpha + pad(ssm_n_v_heads);
    r.conv = r.beta + pad(ssm_n_v_heads);
    r.width = r.conv + pad(ssm_conv_channels());
    return r;
  }

  // Mamba-2 hybrids (mamba2_spec.h: granitehybrid, nemotron_h): a recurrent layer projects its
  // normed input by ssm_in into z | xBC | dt (mamba_d_inner, conv channels, mamba_n_head), runs a
  // causal conv of ssm_conv_kernel taps (+ bias, SiLU) over xBC = x | B | C (x: mamba_n_head heads
  // of mamba_head_dim(); B, C: mamba_n_group groups of mamba_d_state), the selective scan with a
  // scalar decay per head, y * silu(z), an RMS norm per group and ssm_out. Its state: the conv's
  // last kernel - 1 inputs, then per head head_dim x d_state floats (ggml's layout).
  uint32_t mamba_d_inner = 0;
  uint32_t mamba_d_state = 0;
  uint32_t mamba_n_group = 0;
  uint32_t mamba_n_head = 0;
  bool is_mamba2() const { return mamba_d_state > 0; }
  uint32_t mamba_head_dim() const { return mamba_n_head ? mamba_d_inner / mamba_n_head : 0; }
  uint32_t mamba_conv_channels() const { return mamba_d_inner + 2 * mamba_n_group * mamba_d_state; }
  uint32_t mamba_in_proj() const { return mamba_d_inner + mamba_conv_channels() + mamba_n_head; }
  uint64_t mamba_conv_state_floats() const {
    return uint64_t(ssm_conv_kernel - 1) * mamba_conv_channels();
  }
  uint64_t mamba_state_floats() const {
    return mamba_conv_state_floats() + uint64_t(mamba_d_inner) * mamba_d_state;
  }
  // Where a Mamba-2 layer's per-token parts sit in its QKV activation row (mamba2_forward.h):
  // ssm_in's output z | xBC | dt from 0, the conv's output at `conv` (a multiple of 64 floats);
  // width is the row's stride.
  struct Mamba2Row {
    uint32_t xbc = 0, dt = 0, conv = 0, width = 0;
  };
  Mamba2Row mamba2_row() const {
    auto pad = [](uint32_t n) { return (n + 63) / 64 * 64; };
    Mamba2Row r;
    r.xbc = mamba_d_inner;
    r.dt = mamba_d_inner + mamba_conv_channels();
    r.conv = pad(mamba_in_proj());
    r.width = r.conv + pad(mamba_conv_channels());
    return r;
  }
  bool is_nemotron_h() const { return arch == Arch::NemotronH || arch == Arch::NemotronHMoe; }
  // Granite's multipliers (granitehybrid; 1: none): each block's output is scaled by
  // residual_scale before it joins the residual stream, the logits divided by logit_scale.
  float residual_scale = 1.0f;
  float logit_scale = 1.0f;
  // Nemotron-H: layers that are only an FFN (up, relu^2, down; no gate, no attention, no state);
  // in its MoE variant these are the MoE layers (layer_is_moe).
  std::vector<bool> layer_is_mlp;
  bool is_mlp_layer(uint32_t l) const { return l < layer_is_mlp.size() && layer_is_mlp[l]; }

  // Floats of each layer's recurrent state (0: an attention layer), for kv::StateLayout::make.
  std::vector<uint64_t> recurrent_state_floats() const;
  // Floats per token of the QKV activation: Q|K|V, or a recurrent layer's input projection
  // (LFM2: B|C|X, 3 x n_embd; Qwen3.5: qwen35_forward.h's layout).
  uint32_t qkv_act_width() const {
    const uint32_t qkv = n_embd_q() + 2 * n_embd_k_gqa();
    if (is_delta_net()) {
      // A NextN block's [enorm(embedding) | hnorm(hidden)] rows are laid out here too.
      return std::max({2 * n_embd_q(), delta_net_row().width, nextn_head ? 2 * n_embd : 0u});
    }
    if (is_mamba2()) return std::max(qkv, mamba2_row().width);
    return has_recurrent_state() ? std::max(qkv, 3 * n_embd) : qkv;
  }
  // Floats per token of the Attn activation: attention's output, or a short convolution's
  // (a DeltaNet's).
  uint32_t attn_act_width() const {
    if (is_delta_net()) return std::max(n_embd_q(), ssm_value_dim());
    if (is_mamba2()) return std::max(n_embd_q(), mamba_d_inner);
    return has_recurrent_state() ? std::max(n_embd_q(), n_embd) : n_embd_q();
  }

  // Gemma 3n (gemma3n_spec.h reads them, runtime/gemma3n_forward.h runs them); n_altup 0 for
  // every other architecture. AltUp keeps n_altup parallel residual streams of which stream
  // altup_active runs through each layer; per-layer inputs are n_embd_altup wide; LAuReL's
  // low-rank branch is laurel_rank wide; the FFN gates of the first n_layer_sparse layers keep
  // only what exceeds their row's mean + sparsity_std_mul * std (the Gaussian top-k).
  uint32_t n_altup = 0;
  uint32_t altup_active = 0;
  uint32_t n_embd_altup = 0;
  uint32_t laurel_rank = 0;
  uint32_t n_layer_sparse = 0;
  float sparsity_std_mul = 0.0f;
  bool is_gemma3n() const { return n_altup > 0; }
  // KV sharing (Gemma 3n): only the first n_layer_kv layers have a cache (0: no sharing); a later
  // layer writes none and attends over the last cached layer of its kind (windowed or global).
  uint32_t n_layer_kv = 0;

  // The paged KV cache's layers, one rule for the backends (a K and a V region per such layer)
  // and the scheduler (KV bytes per token): a layer owns K/V unless it is recurrent (hybrid
  // models) or reads another layer's cache (Gemma 3n's shared layers). A model is hybrid or
  // shares KV, never both.
  // Nemotron-H's FFN-only layers own none either.
  bool owns_kv(uint32_t l) const {
    return !is_recurrent(l) && !is_mlp_layer(l) && (n_layer_kv == 0 || l < n_layer_kv);
  }
  // How many layers own K/V in the paged cache.
  uint32_t n_kv_layers() const {
    uint32_t n = 0;
    for (uint32_t l = 0; l < n_layer; ++l) n += owns_kv(l) ? 1 : 0;
    return n;
  }
  // The layer whose cache attention layer l reads (and, owning it, writes): itself, or for a
  // shared layer the last layer of its kind (windowed or global) that owns one.
  uint32_t kv_layer(uint32_t l) const {
    if (n_layer_kv == 0 || l < n_layer_kv) return l;
    return n_layer_kv - (layer_is_swa[l] ? 2 : 1);
  }

  // Gemma 4 (gemma4_spec.h reads them, runtime/gemma4_forward.h runs them): its global layers
  // have their own head size, K/V head count and rotated dimensions, and its layers may differ
  // in FFN width, so these hold one value per layer (empty for every other architecture, whose
  // layers all have head_dim, n_head_kv, n_ff and rope_dims). The scalars then hold the largest
  // value, which sizes the activations. A layer without attn_v uses its raw K as V
  // (layer_v_is_k). Per-layer inputs (n_embd_altup wide) as Gemma 3n's, without AltUp.
  std::vector<uint32_t> layer_head_dim, layer_n_head_kv, layer_n_ff, layer_rope_dims;
  std::vector<bool> layer_v_is_k;
  std::vector<bool> layer_out_scaled;  // blk.N.layer_output_scale multiplies the layer's output
  // Gemma 4's MoE layers: each expert's output has its own factor (ffn_down_exps.scale).
  bool moe_down_scales = false;
  uint32_t head_dim_of(uint32_t l) const {
    return layer_head_dim.empty() ? head_dim : layer_head_dim[l];
  }
  uint32_t n_head_kv_of(uint32_t l) const {
    return layer_n_head_kv.empty() ? n_head_kv : layer_n_head_kv[l];
  }
  uint32_t n_ff_of(uint32_t l) const { return layer_n_ff.empty() ? n_ff : layer_n_ff[l]; }
  uint32_t rope_dims_of(uint32_t l) const {
    return layer_rope_dims.empty() ? rope_dims : layer_rope_dims[l];
  }
  // Gemma 3n's and Gemma 4's per-layer inputs (Act::PerLayer and its scratch rows).
  bool has_per_layer_inputs() const { return n_embd_altup > 0; }
  // Gemma 4's MoE layers add a dense FFN beside the experts; their router reads its own input.
  bool is_gemma4() const { return arch == Arch::Gemma4; }

  uint32_t n_embd_k_gqa() const { return head_dim * n_head_kv; }
  uint32_t n_embd_v_gqa() const { return head_dim_v * n_head_kv; }
  uint32_t n_embd_q() const { return head_dim * n_head; }

  // Reads and checks the metadata (and which optional tensors exist). Throws std::runtime_error
  // naming the missing key or the unsupported architecture.
  static ModelSpec from_gguf(const gguf::GgufFile& file);
};

const char* arch_name(Arch arch);

}  // namespace vkllm::model
