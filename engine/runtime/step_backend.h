// The operations a decoder step's graph (Forward) is made of, offered by a backend that owns the
// step's activations, the paged KV cache and the model's weights: Vulkan (records dispatches into
// a command buffer) or the CPU (runs them at once on host memory). The graph names activations by
// role and row layout and weights by model::Weight and layer; each backend maps them onto its own
// memory. Sizes are in elements.
//
// The second half of the interface is the Runner's: step inputs, submission, results, limits.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/kv/kv_layout.h"
#include "engine/kv/state_layout.h"
#include "engine/model/weight_names.h"
#include "engine/runtime/step_operands.h"

namespace vkllm::runtime {

// A mixture-of-experts feed-forward of layer `layer` (model::ModelSpec::is_moe): for every step
// token t, router logits Weight::FfnGateInp x[t], softmax, the n_used most probable of n_expert
// experts (ties: the lower index), their probabilities renormalised to sum 1 when
// `norm_weights`, and out[t] += sum over the selected experts e, in rank order, of
// weight_e * down_e(act(gate_e x[t]) * up_e x[t]) with the stacked expert weights
// (Weight::FfnGateExps / FfnUpExps / FfnDownExps). Only selected experts are computed.
struct MoeSpec {
  uint32_t layer = 0;
  Rows x, out;
  uint32_t n_embd = 0;
  uint32_t n_ff = 0;  // one expert's FFN width
  uint32_t n_expert = 0, n_used = 0;
  bool norm_weights = true;
  GluAct act = GluAct::Silu;
  // gpt-oss: softmax over the k selected logits instead of the top k of the softmax, and the
  // router / expert biases (model::ModelSpec::moe_gating, moe_biases).
  bool softmax_after_top_k = false;
  bool biases = false;
  // Gemma 4: the router reads its own input rows (router_x, when router_own_input), each
  // selected expert's weight is multiplied by its Weight::FfnDownExpsScale value (down_scales),
  // and out is overwritten rather than added to (accumulate false).
  bool router_own_input = false;
  Rows router_x;
  bool down_scales = false;
  bool accumulate = true;
  // Every selected expert's weight is multiplied by this after routing (Granite's residual
  // scale of the FFN output: linear in the experts' sum).
  float weight_scale = 1.0f;
  // Llama 4: the top n_used logits, each weighted by its sigmoid (no softmax, no
  // renormalisation), and each selected expert's input multiplied by its weight instead of its
  // output: out[t] += sum_e down_e(act(gate_e (w_e x[t])) * up_e (w_e x[t])).
  bool sigmoid = false;
  bool weight_before_ffn = false;
  // DeepSeek V3's routing (Nemotron-H MoE): each expert's score is the sigmoid of its logit, the
  // n_used best of score + Weight::FfnExpProbsBias (when select_bias) are chosen, and weighted by
  // their unbiased scores, renormalised when norm_weights, then times weight_scale.
  bool sigmoid_scores = false;
  bool select_bias = false;
  // false: the experts have no gate (Weight::FfnGateExps absent) and run down(relu(up x)^2)
  // (Nemotron-H MoE); act is then not used.
  bool gated = true;
};

// LFM2's gated short convolution of layer `layer` over the step's tokens: bcx holds each token's
// in_proj output B|C|X (3 x n_embd), and out[t] = C[t] * sum_k w[k] * (B * X)[p - (L-1) + k]
// per channel, for the token at position p of its sequence, with the depthwise kernel w
// (Weight::ShortConvConv, L = l_cache taps per channel). Inputs before the step's first token
// come from the sequence's recurrent state (kv::StateLayout), zero for a sequence that starts
// at position 0; afterwards the state holds the last L-1 values of B * X. Chunked prefill thus
// equals token-by-token decoding.
struct ShortConvSpec {
  uint32_t layer = 0;
  Rows bcx, out;
  uint32_t n_embd = 0;
  uint32_t l_cache = 0;
  std::span<const WeightRef> feeds{};  // as rms_norm's: the product that reads `out` next
};

// Qwen3.5's Gated DeltaNet (qwen35_forward.h), in two operations over the step's tokens, each
// walking a sequence's tokens in order with the sequence's recurrent state (kv::StateLayout; none
// read for a sequence that starts at position 0), so chunked prefill equals token by token and a
// step mixes prefill and decode freely.
//
// The causal conv of layer `layer`: out[t][c] = silu(sum_k w[c][k] * x[p - (K-1) + k][c]) over
// `channels` channels of K = kernel taps (Weight::SsmConv1d, [K, channels]: channel c's taps
// contiguous), for the token at position p of its sequence; inputs before the step come from the
// first (K-1) x channels floats of the layer's state, which then holds the last K-1 inputs.
// Mamba-2's conv (bias true) adds the layer's Weight::SsmConv1dBias[c] to the sum before the SiLU.
struct SsmConvSpec {
  uint32_t layer = 0;
  Rows x, out;
  uint32_t channels = 0;
  uint32_t kernel = 0;
  bool bias = false;
};
// The gated delta rule of layer `layer`: qkv holds each token's conv output Q|K|V (n_k_heads
// query and key heads, then n_v_heads value heads, all head_dim wide); alpha and beta their raw
// gates (n_v_heads each). Value head h reads query/key head h % n_k_heads (ggml's broadcast).
// Per token: q and k L2-normalised (x / sqrt(sum x^2 + eps)), g = softplus(alpha + dt[h]) * a[h]
// (Weight::SsmDt, Weight::SsmA), beta = sigmoid(beta); the head's state S (head_dim x head_dim,
// at state_offset floats into the layer's state) decays by exp(g), then S += k (x) beta (v - S^T
// k), and out[t][h] = S^T q / sqrt(head_dim).
// grouped (Qwen3-Next): value head h reads query/key head h / r instead (r = n_v_heads /
// n_k_heads), and its alpha and beta at (h / r) * 2r + h % r from alpha's and beta's offsets (one
// row of r betas then r alphas per key head).
struct DeltaNetSpec {
  uint32_t layer = 0;
  Rows qkv, alpha, beta, out;
  uint32_t n_k_heads = 0, n_v_heads = 0, head_dim = 0;
  uint64_t state_offset = 0;
  float eps = 1e-6f;
  bool grouped = false;
};
// Mamba-2's selective scan of layer `layer` (mamba2_forward.h), walking each sequence's tokens in
// order from its carried state as the DeltaNet does. xbc holds each token's conv output x | B | C
// (x: n_head heads of head_dim; B, C: n_group groups of d_state; head h reads group
// h / (n_head / n_group)), dt the raw time steps (n_head). Per token and head:
// dt' = softplus(dt[h] + Weight::SsmDt[h]), decay = exp(dt' * Weight::SsmA[h]); for each row i
// of the head, its state row s (d_state floats at state_offset + (h * head_dim + i) * d_state in
// the layer's state) becomes s * decay + B * (x[i] * dt'), and
// out[t][h * head_dim + i] = s . C + x[i] * Weight::SsmD[h].
struct SsmScanSpec {
  uint32_t layer = 0;
  Rows xbc, dt, out;
  uint32_t n_head = 0, head_dim = 0, n_group = 0, d_state = 0;
  uint64_t state_offset = 0;
};
// One copy of a whole recurrent state into or out of live slot `slot`: into checkpoint slot
// `other` (save, after a step that ended at a block boundary), back from it (restore, before a
// sequence resumes), or from captured state `other` (keep: the state after the tokens a
// speculative step's sequence keeps, kv::StateLayout's slots from n_slots on).
struct StateCopy {
  enum class Kind : uint8_t { save, restore, keep };
  uint32_t slot = 0, other = 0;
  Kind kind = Kind::save;
  // Whether `other` is a captured state (in the live states' memory) rather than a checkpoint.
  bool from_capture() const { return kind == Kind::keep; }
  // Whether the copy goes from the live slot to `other`.
  bool saves() const { return kind == Kind::save; }
};
// Throws std::out_of_range unless `c` names a live slot of `states` and, as its kind says, one
// of `n_checkpoints` checkpoint slots or one of the captured states (copy_states' check).
inline void check_state_copy(const StateCopy& c, const kv::StateLayout& states,
                             uint32_t n_checkpoints) {
  const bool other_ok =
      c.from_capture() ? c.other >= states.n_slots && c.other < states.n_slots + states.n_capture
                       : c.other < n_checkpoints;
  if (c.slot >= states.n_slots || !other_ok)
    throw std::out_of_range("copy_states: no such state, checkpoint or captured slot");
}
// x *= act(gate), elementwise. Relu with x and gate the same rows is relu(x)^2 (Nemotron-H's
// FFN: relu(x) * x).
enum class GateAct : uint8_t { Sigmoid, Silu, Relu };

// Rows pooled per sequence (embedding models).
enum class PoolMode : uint8_t { Mean, First, Last };

// What a step asks for once its graph has run.
struct StepOutputs {
  bool logits = false;  // the R rows of Logits
  bool greedy = false;  // argmax of each logits row
  bool hidden = false;  // the R rows of HSel (no LM head)
  // Encoders: the R rows of Logits holding pooled outputs (n_embd_out each), or every step
  // token's row of X (R = the step's tokens, n_embd each). Read through hidden().
  bool pooled = false;
  bool token_states = false;
  // Every step token's hidden state after the final norm (T rows of n_embd, in H): a model with
  // a multi-token-prediction head feeds them to it (RunnerOptions::token_hidden). Read through
  // token_hidden().
  bool token_hidden = false;
  bool operator==(const StepOutputs&) const = default;
};

// What a step's recording depends on besides the model (everything else it reads, token ids,
// positions, block tables, which rows give logits, is an input the Runner writes): its tokens
// and sequences, the longest query and context, the rows it delivers and what of them.
struct StepKey {
  uint32_t n_tokens = 0, n_seqs = 0, max_q_len = 0, max_kv_len = 0, n_rows = 0;
  StepOutputs out;
  bool injected = false;  // rows replace some token embeddings (never a step recorded ahead)
  bool operator==(const StepKey&) const = default;
};

class StepBackend {
 public:
  virtual ~StepBackend() = default;

  // ---- The graph's operations, in step order. A backend that records (Vulkan) runs nothing
  // before end_step(); one that computes (CPU) runs each at once.

  // out[t] = scale * row ids[t] of the table, for the step's token ids.
  virtual void embed(WeightRef table, Rows out, uint32_t n_tokens, float scale) = 0;
  // y = x / rms(x) * w over `rows` rows of n. `feeds`: the weights whose products read y next,
  // so a backend may prepare their quantized input here (Vulkan: a fused q8 copy).
  virtual void rms_norm(Rows x, WeightRef w, Rows y, uint32_t n, uint32_t rows,
                        std::span<const WeightRef> feeds = {}) = 0;
  // Every product reads the same n rows of x (the weights' cols wide): one call so the input
  // is quantized once for all of them (Q/K/V, gate/up).
  virtual void products(Rows x, uint32_t n, std::span<const ProductOut> outs) = 0;
  // A residual product and the norm of its result: `out` adds W x into norm.x, then
  // norm.y = rms_norm(norm.x) for the products in norm.feeds, as products(), barrier() and
  // rms_norm() in a row (what this does). A backend may fuse the two (Vulkan at decode).
  struct NormAfter {
    Rows x;
    WeightRef w;
    Rows y;
    uint32_t n = 0;
    std::span<const WeightRef> feeds{};
  };
  virtual void products_then_norm(Rows in, uint32_t n_tokens, const ProductOut& out,
                                  const NormAfter& norm) {
    products(in, n_tokens, std::span(&out, 1));
    barrier();
    rms_norm(norm.x, norm.w, norm.y, norm.n, n_tokens, norm.feeds);
  }
  // The FFN's gate and up products of x and the gated activation of their results:
  // glu.out = act(glu.gate) * glu.up, as products(), barrier() and glu() in a row (what this
  // does). A backend may fuse the three (Vulkan at decode).
  struct GluAfter {
    GluAct act{};
    Rows gate, up, out;
    uint32_t n = 0;
    std::span<const WeightRef> feeds{};
  };
  virtual void products_then_glu(Rows x, uint32_t n_tokens, std::span<const ProductOut> outs,
                                 const GluAfter& glu) {
    products(x, n_tokens, outs);
    barrier();
    this->glu(glu.act, glu.gate, glu.up, glu.out, glu.n, n_tokens, glu.feeds);
  }
  // The Q|K|V products of x, then RoPE of q's n_q_heads heads and the K and V cache writes of
  // `layer`: products(), barrier(), rope() and write_kv() of K and of V (what this does). A
  // backend may fuse them (Vulkan at decode).
  struct RopeKvAfter {
    uint32_t layer = 0;
    RopeSpec rope;
    Rows q, k, v;
    uint32_t n_q_heads = 0;
  };
  virtual void products_then_rope_kv(Rows x, uint32_t n_tokens, std::span<const ProductOut> outs,
                                     const RopeKvAfter& r) {
    products(x, n_tokens, outs);
    barrier();
    rope(r.rope, r.q, r.n_q_heads);
    write_kv(r.layer, /*value=*/false, &r.rope, r.k);
    write_kv(r.layer, /*value=*/true, nullptr, r.v);
  }
  // Per-head norms before RoPE and the cache writes (Qwen3's and Gemma's Q/K norms, Gemma 4's
  // plain V norm): q's heads normed by q_norm and rotated by rope_q; where kv (the layer writes
  // its cache), k's normed by k_norm, rotated by rope_k where given and written, v's normed plainly
  // where v_norm and written. rms_norm()s, barrier(), rope() and write_kv()s in a row (what this
  // does); a backend may norm inside the rotation and the writes (Vulkan: no norm dispatches).
  struct NormRopeKv {
    uint32_t layer = 0, n_tokens = 0, head_dim = 0, n_q_heads = 0, n_kv_heads = 0;
    Rows q, k, v;  // packed tokens (stride 0 or heads x head_dim)
    WeightRef q_norm, k_norm;
    bool kv = true, v_norm = false;
    RopeSpec rope_q;
    const RopeSpec* rope_k = nullptr;
    // Layer l's Q and K norms (attn_q_norm, attn_k_norm) over packed q, k, v rows.
    static NormRopeKv of_layer(uint32_t l, uint32_t n_tokens, uint32_t head_dim, uint32_t n_q_heads,
                               uint32_t n_kv_heads, Rows q, Rows k, Rows v) {
      NormRopeKv n;
      n.layer = l;
      n.n_tokens = n_tokens;
      n.head_dim = head_dim;
      n.n_q_heads = n_q_heads;
      n.n_kv_heads = n_kv_heads;
      n.q = q;
      n.k = k;
      n.v = v;
      n.q_norm = {model::Weight::AttnQNorm, l};
      n.k_norm = {model::Weight::AttnKNorm, l};
      return n;
    }
  };
  virtual void norm_rope_kv(const NormRopeKv& s) {
    // The packed rows as T x heads rows of hd.
    const uint32_t hd = s.head_dim, T = s.n_tokens;
    const Rows q{s.q.act, s.q.off}, k{s.k.act, s.k.off}, v{s.v.act, s.v.off};
    rms_norm(q, s.q_norm, q, hd, T * s.n_q_heads);
    if (s.kv) rms_norm(k, s.k_norm, k, hd, T * s.n_kv_heads);
    if (s.kv && s.v_norm) rms_norm_plain(v, v, hd, T * s.n_kv_heads);
    barrier();
    rope(s.rope_q, s.q, s.n_q_heads);
    if (!s.kv) return;
    write_kv(s.layer, /*value=*/false, s.rope_k, s.k);
    write_kv(s.layer, /*value=*/true, nullptr, s.v);
  }
  // x[r] += bias over `rows` rows of n (nothing when the bias is absent).
  virtual void add_bias(WeightRef bias, Rows x, uint32_t n, uint32_t rows) = 0;
  // out = a + b over n elements.
  virtual void add(Rows a, Rows b, Rows out, uint64_t n) = 0;
  // Rotates n_heads heads of every step token in place, at the token's position.
  virtual void rope(const RopeSpec& rope, Rows x, uint32_t n_heads) = 0;
  // Writes every step token's KV heads of src into the layer's K (value: V) cache at its slot,
  // rotated first when `rope` is given.
  virtual void write_kv(uint32_t layer, bool value, const RopeSpec* rope, Rows src) = 0;
  // Causal paged attention of the step's tokens over their sequences' caches.
  virtual void attention(const AttentionSpec& a) = 0;
  // out = act(gate) * up over `rows` rows of n; `feeds` as for rms_norm.
  virtual void glu(GluAct act, Rows gate, Rows up, Rows out, uint32_t n, uint32_t rows,
                   std::span<const WeightRef> feeds = {}) = 0;
  // The mixture-of-experts FFN (MoeSpec) of the step's n_tokens tokens. A backend may use the
  // Gate, Up and FfnAct activations (ModelSpec::ffn_act_width floats per token) as scratch.
  virtual void moe_ffn(const MoeSpec& /*moe*/, uint32_t /*n_tokens*/) { unsupported("moe_ffn"); }
  // How many moe_ffn calls of real (not warm-up) steps so far took a grouped path (experts'
  // tokens gathered into GEMMs) rather than a per-pair one; backends without one say 0.
  virtual uint64_t moe_grouped_ffns() const { return 0; }
  // Of the others, how many grouped the pairs for the decode kernel (backends without it: 0).
  virtual uint64_t moe_grouped_matvec_ffns() const { return 0; }
  // Of the per-pair ones, how many read q8 copies of their inputs with int8 dot products.
  virtual uint64_t moe_int8_ffns() const { return 0; }
  // The short convolution (ShortConvSpec) of every step token, reading and updating the
  // sequences' recurrent states (the batch metadata's seq_state slots).
  virtual void short_conv(const ShortConvSpec& /*conv*/) { unsupported("short_conv"); }
  // Qwen3.5's DeltaNet conv and recurrence (SsmConvSpec, DeltaNetSpec), reading and updating
  // the sequences' recurrent states, and x *= act(gate) over `rows` rows of n (Rows strides as
  // elsewhere; the attention output gate and the DeltaNet's gated norm). per_row: the gate is
  // one value per row (gate row r's first element; a shared expert's gate), x[r] *= act(g[r]).
  virtual void ssm_conv(const SsmConvSpec& /*conv*/) { unsupported("ssm_conv"); }
  virtual void delta_net(const DeltaNetSpec& /*dn*/) { unsupported("delta_net"); }
  // Mamba-2's selective scan (SsmScanSpec), reading and updating the sequences' states.
  virtual void ssm_scan(const SsmScanSpec& /*scan*/) { unsupported("ssm_scan"); }
  virtual void gate_rows(GateAct /*act*/, Rows /*x*/, Rows /*gate*/, uint32_t /*n*/,
                         uint32_t /*rows*/, bool /*per_row*/ = false) {
    unsupported("gate_rows");
  }
  // A post-norm's residual: y = r + rms_norm(x) * w over `rows` rows of n (y may be r; x is
  // scratch and may be overwritten). `feeds` as for rms_norm, for y. This is rms_norm() of x in
  // place, barrier() and the add in a row; a backend may fuse them (Vulkan: one dispatch).
  virtual void rms_norm_add(Rows x, WeightRef w, Rows r, Rows y, uint32_t n, uint32_t rows,
                            std::span<const WeightRef> /*feeds*/ = {}) {
    rms_norm(x, w, x, n, rows);
    barrier();
    const auto dense = [n](Rows v) { return v.stride == 0 || v.stride == n; };
    if (dense(x) && dense(r) && dense(y))
      add(r, x, y, uint64_t(n) * rows);
    else
      add_rows(r, x, y, n, rows, 1.0f);
  }
  // A post-norm's residual and the next block's norm (Gemma's post-attention norm then pre-FFN
  // norm; a layer's last post-norm then the next layer's input norm): r += rms_norm(x) * w, then
  // r *= the single value of `scale` where given (Gemma 4's layer output scale), then
  // next.y = rms_norm(r) * next.w with next.x = r. As rms_norm_add(), mul_weight(), barriers and
  // rms_norm() in a row (what this does); a backend may fuse them (Vulkan: one dispatch).
  virtual void rms_norm_add_norm(Rows x, WeightRef w, Rows r, const WeightRef* scale,
                                 const NormAfter& next, uint32_t rows) {
    rms_norm_add(x, w, r, r, next.n, rows);
    barrier();
    if (scale) {
      mul_weight(r, *scale, r, 1, rows * next.n);
      barrier();
    }
    rms_norm(next.x, next.w, next.y, next.n, rows, next.feeds);
  }
  // Qwen3.5's gated norm: y = rms_norm(x) * w over `rows` rows of n (dense: y.stride 0 or n),
  // then y *= silu(gate) with every `group` consecutive rows of y read as one row of gate
  // (n * group wide: a token's value heads). `feeds` as for rms_norm, for the y rows n * group
  // wide. This is rms_norm(), barrier() and gate_rows() in a row; a backend may fuse them
  // (Vulkan: one dispatch that also writes the q8 copy).
  virtual void gated_rms_norm(Rows x, WeightRef w, Rows y, uint32_t n, uint32_t rows, Rows gate,
                              uint32_t group, std::span<const WeightRef> /*feeds*/ = {}) {
    rms_norm(x, w, y, n, rows);
    barrier();
    gate_rows(GateAct::Silu, {y.act, y.off, n * group}, gate, n * group, rows / group);
  }
  // to[r] = from[selected row r] for the step's n_sel selected rows, rows of n elements.
  virtual void select_rows(Rows from, Rows to, uint32_t n, uint32_t n_sel) = 0;
  // x = cap * tanh(x / cap) over n elements.
  virtual void softcap(Rows x, uint64_t n, float cap) = 0;
  // The step's greedy result of row r = argmax over its n elements, for `rows` rows.
  virtual void argmax(Rows logits, uint32_t n, uint32_t rows) = 0;
  // Later operations read what earlier ones wrote (a recording backend places a barrier).
  virtual void barrier() = 0;
  // Layer boundaries and phase marks inside a layer, for profiles and partial submissions.
  virtual void begin_layer(uint32_t layer) = 0;
  virtual void end_layer(uint32_t layer) = 0;
  virtual void mark(const char* phase) = 0;       // inside the profiled layer only
  virtual void timestamp(const char* phase) = 0;  // step phases, always

  // ---- Encoder operations (bert-family: EncoderForward). A backend without them throws
  // std::logic_error. Encoder K/V live for one layer only: RunnerOptions::kv_scratch_blocks.

  // Whether the model has the weight (optional biases and heads shape the encoder's graph).
  virtual bool has(WeightRef /*w*/) const { unsupported("has"); }
  // out[t] = the table's row at step token t's position in its sequence (learned positions).
  virtual void embed_positions(WeightRef /*table*/, Rows /*out*/, uint32_t /*n_tokens*/) {
    unsupported("embed_positions");
  }
  // out = the table's row `row` (n_embd elements), e.g. token type 0.
  // x's rows that set_injected_rows named overwritten with its rows (n elements each); after
  // embed, so the injected rows are not scaled as token embeddings are (Gemma 3's images).
  virtual void inject_rows(Rows /*x*/, uint32_t /*n*/) { unsupported("inject_rows"); }
  // Deepstack (Qwen3-VL): x's rows that set_injected_rows named += slice `slice` (1 to
  // n_deepstack, n elements) of their input rows.
  virtual void add_injected_slice(Rows /*x*/, uint32_t /*n*/, uint32_t /*slice*/) {
    unsupported("add_injected_slice");
  }
  virtual void embed_row(WeightRef /*table*/, uint32_t /*row*/, Rows /*out*/) {
    unsupported("embed_row");
  }
  // x[r] += row (n elements) over `rows` rows of n.
  virtual void add_row(Rows /*row*/, Rows /*x*/, uint32_t /*n*/, uint32_t /*rows*/) {
    unsupported("add_row");
  }
  // y = (x - mean) / sqrt(var + eps) * w + b over `rows` packed rows of n; y may be x.
  virtual void layer_norm(Rows /*x*/, WeightRef /*w*/, WeightRef /*b*/, Rows /*y*/, uint32_t /*n*/,
                          uint32_t /*rows*/) {
    unsupported("layer_norm");
  }
  // out = gelu(x) (tanh approximation) and out = tanh(x) over n elements; out may be x.
  virtual void gelu(Rows /*x*/, Rows /*out*/, uint64_t /*n*/) { unsupported("gelu"); }
  // out = tanh(in_scale * x) over n elements.
  virtual void tanh(Rows /*x*/, Rows /*out*/, uint64_t /*n*/, float /*in_scale*/ = 1.0f) {
    unsupported("tanh");
  }
  // out[s] = the mean, first or last of sequence s's rows of x (n packed elements each), for
  // every sequence of the step.
  virtual void pool(PoolMode /*mode*/, Rows /*x*/, uint32_t /*n*/, Rows /*out*/) {
    unsupported("pool");
  }
  // to = from over n elements.
  virtual void copy(Rows /*from*/, Rows /*to*/, uint64_t /*n*/) { unsupported("copy"); }

  // ---- Gemma 3n's operations (gemma3n_forward.h). A backend without them throws
  // std::logic_error. Each works on `rows` rows of n elements (Rows strides as elsewhere; a
  // stride 0 means rows packed n wide).

  // y = x / sqrt(mean(x^2) + eps): RMSNorm without a weight (y may be x).
  virtual void rms_norm_plain(Rows /*x*/, Rows /*y*/, uint32_t /*n*/, uint32_t /*rows*/) {
    unsupported("rms_norm_plain");
  }
  // out = (a + b) * scale (out may be a or b).
  virtual void add_rows(Rows /*a*/, Rows /*b*/, Rows /*out*/, uint32_t /*n*/, uint32_t /*rows*/,
                        float /*scale*/) {
    unsupported("add_rows");
  }
  // out = a * b elementwise (out may be a or b).
  virtual void mul_rows(Rows /*a*/, Rows /*b*/, Rows /*out*/, uint32_t /*n*/, uint32_t /*rows*/) {
    unsupported("mul_rows");
  }
  // out[r] = x[r] * w, w a weight of n values (out may be x).
  virtual void mul_weight(Rows /*x*/, WeightRef /*w*/, Rows /*out*/, uint32_t /*n*/,
                          uint32_t /*rows*/) {
    unsupported("mul_weight");
  }
  // x *= s.
  virtual void scale_rows(Rows /*x*/, uint32_t /*n*/, uint32_t /*rows*/, float /*s*/) {
    unsupported("scale_rows");
  }
  // Activation sparsity by a Gaussian top-k: x = max(x - (mean + std_mul * std), 0) with the
  // row's mean and its standard deviation over n - 1.
  virtual void gaussian_topk(Rows /*x*/, uint32_t /*n*/, uint32_t /*rows*/, float /*std_mul*/) {
    unsupported("gaussian_topk");
  }
  // out[r] = x[r] * |ref[r]| / |x[r]| (Euclidean norms): x rescaled to ref's magnitude.
  virtual void match_magnitude(Rows /*ref*/, Rows /*x*/, Rows /*out*/, uint32_t /*n*/,
                               uint32_t /*rows*/) {
    unsupported("match_magnitude");
  }
  // AltUp's streams: `streams` and `out` hold per row n_streams vectors of n (vector i at
  // off + r * stride + i * n). Predict: out_i = s_i + sum_j coefs[r][i * n_streams + j] s_j.
  virtual void altup_predict(Rows /*streams*/, Rows /*coefs*/, Rows /*out*/, uint32_t /*n*/,
                             uint32_t /*n_streams*/, uint32_t /*rows*/) {
    unsupported("altup_predict");
  }
  // Correct: out_i = pred_i + (coefs[r][i] + 1) * (active - pred_{i_active}).
  virtual void altup_correct(Rows /*pred*/, Rows /*active*/, Rows /*coefs*/, Rows /*out*/,
                             uint32_t /*n*/, uint32_t /*n_streams*/, uint32_t /*i_active*/,
                             uint32_t /*rows*/) {
    unsupported("altup_correct");
  }
  // out[r] = the mean of row r's n_streams vectors.
  virtual void mean_streams(Rows /*streams*/, Rows /*out*/, uint32_t /*n*/, uint32_t /*n_streams*/,
                            uint32_t /*rows*/) {
    unsupported("mean_streams");
  }

  // ---- The Runner's side.

  // Limits the backend was sized for (after its own clamps).
  virtual uint32_t max_batch_tokens() const = 0;
  virtual uint32_t max_logits_rows() const = 0;
  virtual const kv::KvLayout& kv_layout() const = 0;
  // KV cache bytes, the recurrent states' included.
  virtual uint64_t kv_bytes() const = 0;
  // The recurrent states the backend holds (empty for a model without recurrent layers): one
  // per kv::StateSlots slot, max_seqs of them.
  virtual const kv::StateLayout& state_layout() const {
    static const kv::StateLayout none;
    return none;
  }
  // State checkpoints (kv::StateCheckpoints): slots of the same size as a live state's, held
  // beside the live states (their bytes in kv_bytes()).
  virtual uint32_t state_checkpoints() const { return 0; }
  // Copies whole states (every recurrent layer) between live slots and checkpoint slots, or from
  // captured states into live slots, in order, between steps: the copies are done when it
  // returns, and the next step reads them.
  virtual void copy_states(std::span<const StateCopy> /*copies*/) { unsupported("copy_states"); }
  virtual uint64_t activation_bytes() const = 0;
  // KV + activation bytes on each device the backend spans, in stage order (one unless split).
  virtual std::vector<uint64_t> device_step_bytes() const {
    return {kv_bytes() + activation_bytes()};
  }
  // Step inputs, written by the Runner before begin_step(): max_batch_tokens token ids and
  // max_logits_rows selected rows (indices of step tokens whose logits are wanted).
  virtual uint32_t* token_ids() = 0;
  virtual uint32_t* selected_rows() = 0;
  // M-RoPE models (RopeSpec::mrope_sections): 3 words (t, h, w rotary positions) per step token,
  // written by the Runner before begin_step() like the token ids.
  virtual uint32_t* rope_positions() { unsupported("rope_positions"); }
  virtual void begin_step(const kv::BatchMeta& meta) = 0;
  // Step input beside the token ids, before begin_step(): the rows inject_rows() writes (the
  // backend copies them; at most max_batch_tokens rows in all). A backend without the memory
  // for them (RunnerOptions::embedding_inputs off) throws std::invalid_argument.
  virtual void set_injected_rows(std::span<const InjectedRows> /*rows*/) {
    unsupported("set_injected_rows");
  }
  // Delivers what the step asked for and waits for it.
  virtual void end_step(const StepOutputs& out, uint32_t n_rows) = 0;

  // Steps recorded ahead (a backend whose steps run asynchronously; the others keep these
  // defaults): end_step() in two halves, submit_step() and wait_step(), and between them the
  // Runner may record the step it expects next, from begin_ahead(key) through the forward pass
  // to end_ahead(), while the device runs the current one. The next step then calls
  // take_ahead(meta, key) instead of begin_step(): if the recording made ahead has its key, it
  // writes the inputs and that recording is the step's (no forward pass to record).
  virtual bool records_ahead() const { return false; }
  virtual void submit_step(const StepOutputs& out, uint32_t n_rows) { end_step(out, n_rows); }
  virtual void wait_step() {}
  virtual void begin_ahead(const StepKey&) {}
  virtual void end_ahead() {}
  // A recording ahead that failed part way: forget it.
  virtual void drop_ahead() {}
  virtual bool take_ahead(const kv::BatchMeta&, const StepKey&) { return false; }
  // Pipeline stages (SplitBackend: a model's layers split across backends): a stage after the
  // first starts its part of a step with the residual stream the stage before handed it, and a
  // stage before the last ends its part by handing the stream on.
  // begin_step(meta), then the first n elements of x set to `data` (host memory).
  virtual void begin_stage(const kv::BatchMeta& /*meta*/, Rows /*x*/, const float* /*data*/,
                           uint64_t /*n*/) {
    unsupported("begin_stage");
  }
  // Ends the step (end_step without outputs: everything recorded runs, and is waited for) and
  // returns the first n elements of x in host memory, valid until this backend's next step.
  const float* end_stage(Rows x, uint64_t n) {
    submit_stage(x, n);
    return wait_stage();
  }
  // end_stage in two halves, so that several devices run their parts at once (the row split):
  // submit_stage records the copy of x's first n elements and submits, wait_stage waits and
  // returns them.
  virtual void submit_stage(Rows /*x*/, uint64_t /*n*/) { unsupported("submit_stage"); }
  virtual const float* wait_stage() { unsupported("wait_stage"); }

  // After end_step: R rows of n_vocab logits, R greedy tokens, R rows of n_embd hidden states.
  virtual const float* logits() const = 0;
  virtual const uint32_t* greedy() const = 0;
  virtual const float* hidden() const = 0;
  // After end_step of a step with StepOutputs::token_hidden: its T rows of n_embd.
  virtual const float* token_hidden() const { unsupported("token_hidden"); }

  // Prepares everything a step can use by running `dry_steps` (which calls Runner::step) in a
  // mode where nothing runs; returns how many things (pipelines) were made. A backend with
  // nothing to prepare returns 0 without calling it.
  virtual size_t warm_up(const std::function<void()>& dry_steps) = 0;
  // Time of the last step's phases (empty if not measured).
  virtual std::vector<std::pair<std::string, double>> timings() const = 0;

 private:
  [[noreturn]] static void unsupported(const char* op) {
    throw std::logic_error(std::string("this backend has no operation ") + op);
  }
};

}  // namespace vkllm::runtime
