// The operands of StepBackend's operations (step_backend.h): the activations a step's graph
// names by role (Act) and row layout (Rows), weights by model::Weight and layer (WeightRef), the
// rows that replace token embeddings (InjectedRows), and the descriptions of a product's output,
// a rotation and an attention (ProductOut, RopeSpec, AttentionSpec, GluAct). Sizes are in
// elements.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "engine/model/weight_names.h"

namespace vkllm::runtime {

// Rows that replace the embedded rows of step tokens [row, row + n) (an image's embeddings): n
// rows of the model's n_embd_inp() floats at `data` (n_embd, then Qwen3-VL's deepstack slices),
// host memory valid until the step ends.
struct InjectedRows {
  uint32_t row = 0;
  uint32_t n = 0;
  const float* data = nullptr;
};

// A step's activation buffers, each sized by the backend for the step limits (tokens T, logits
// rows R): X residual stream, H normed input of a product (T x n_embd); Q, K, V and the fused
// QKV; Attn attention output; Gate and Up (Up holds 2 x n_ff per token for fused gate|up); FfnAct
// the gated activation; XSel, HSel the rows that produce logits (R x n_embd) before and after the
// final norm; Logits (R x n_vocab).
//
// Encoders (EncoderForward) use R = their inputs and reuse the row buffers: XSel holds the token
// type row, then the first tokens of the rank head; HSel the rank head's hidden rows; Logits the
// pooled outputs (R x n_embd_out; a backend sizes it for max(n_vocab, n_embd_out)).
//
// Gemma 3n only (ModelSpec::is_gemma3n; other models size them 0): Alt its AltUp streams and
// AltPred their predictions (T x n_altup x n_embd, token t's stream i at (t * n_altup + i) *
// n_embd); PerLayer the per-layer inputs (T x n_layer x n_embd_altup); Aux (T x max(n_layer x
// n_embd_altup, (n_altup - 1) x n_embd)) and AuxB (T x max(n_embd, laurel_rank)) scratch rows;
// Modal the AltUp router's outputs (T x n_altup) and Coef its coefficients (T x n_altup^2).
enum class Act : uint8_t {
  X,
  H,
  Q,
  K,
  V,
  QKV,
  Attn,
  Gate,
  Up,
  FfnAct,
  XSel,
  HSel,
  Logits,
  Alt,
  AltPred,
  PerLayer,
  Aux,
  AuxB,
  Modal,
  Coef,
};

// Rows of an activation: row t starts at element off + t * stride; stride 0 means rows packed at
// the width of the operation that reads or writes them.
struct Rows {
  Act act = Act::X;
  uint32_t off = 0;
  uint32_t stride = 0;
};

// A weight of the model; Weight::Output is the LM head (the embeddings when tied). Optional
// weights (biases, rope_freqs) may be absent: the operation then does without them.
struct WeightRef {
  model::Weight w = model::Weight::TokenEmbd;
  uint32_t layer = 0;
  // A 3-D weight ([cols, rows, n]) is a stack of n matrices: products use matrix `slice`.
  uint32_t slice = 0;
};

// One product y (+)= W x of several that read the same input.
struct ProductOut {
  WeightRef w;
  Rows y;
  bool accumulate = false;  // y += W x (fused residual add)
};

struct RopeSpec {
  uint32_t head_dim = 0;
  uint32_t n_dims = 0;  // rotated dimensions
  bool neox = false;
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;
  bool freq_factors = false;  // scale frequencies by Weight::RopeFreqs
  // Attention temperature tuning (queries only; model_spec.h): the rotated row is multiplied by
  // 1 + temp_scale * ln(floor((pos + temp_offset) / temp_floor) + 1). temp_scale 0: off.
  float temp_scale = 0.f;
  uint32_t temp_floor = 0;
  uint32_t temp_offset = 0;
  // false: rope() only copies the rows (with the temperature): Llama 4's NoPE layers.
  bool rotate = true;
  // M-RoPE (Qwen2-VL, Qwen2.5-VL; any nonzero): the rotated pairs fall in sections of these
  // sizes, repeating (ggml_rope_multi); a pair in the first turns by the token's rope_positions()
  // t, the second by h, the third by w, a fourth by t. A text token's three are equal (NeoX RoPE).
  std::array<uint32_t, 4> mrope_sections{};
  // Qwen3-VL (llama.cpp's imrope): pair i turns by h when i % 3 == 1 and i < 3 * sections[1], by
  // w when i % 3 == 2 and i < 3 * sections[2], else by t (llama.cpp takes its fourth position
  // for the pairs past 3 * sections[0..2], 0 for an image token: those are the slowest pairs,
  // turned by at most ~1e-4 rad at Qwen3-VL's base 5e6, which vkllm turns by t, as HF does).
  bool mrope_interleaved = false;
};

struct AttentionSpec {
  uint32_t layer = 0;
  Rows q, out;  // head h of token t at off + t * stride + h * head_dim
  uint32_t n_q_heads = 0;
  uint32_t head_dim = 0;
  float scale = 0.f;
  float softcap = 0.f;  // 0: off
  // 0: off. Causal: a query at qp sees keys with qp - kp < window. Not causal: a symmetric
  // window, |qp - kp| < window (EmbeddingGemma's n_swa / 2 + 1).
  uint32_t window = 0;
  // 0: off. Chunked attention (Llama 4, causal only): a query at qp sees the keys from
  // qp - qp % chunk on.
  uint32_t chunk = 0;
  bool causal = true;  // false: every token of the sequence is visible (encoders)
  // false: the layer ignores its sequences' open spans (an image's two-way attention), as Gemma
  // 4's global layers do (llama.cpp's LLAMA_NON_CAUSAL_TYPE_SWA_ONLY).
  bool open_span = true;
  // Weight::AttnSinks of the layer joins each query head's softmax denominator (gpt-oss).
  bool sinks = false;
  // The weights whose products read `out` next, as rms_norm's feeds: a backend may write their
  // quantized input along with the output (Vulkan: q8 from the split-K reduction).
  std::span<const WeightRef> feeds{};
};

// SwigluOai: gpt-oss's clamped SwiGLU (model::Activation::SwigluOai).
enum class GluAct : uint8_t { Silu, GeluTanh, SwigluOai };

}  // namespace vkllm::runtime
