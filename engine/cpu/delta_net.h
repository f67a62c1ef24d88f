// Qwen3.5's Gated DeltaNet on the CPU, with the Vulkan kernels' semantics (shaders/ssm_conv.comp,
// shaders/delta_net.comp; runtime::SsmConvSpec, runtime::DeltaNetSpec): one sequence's tokens of
// a step at a time, in order, starting from the sequence's carried state. Plain float loops in
// the order ggml's CPU backend computes them.
#pragma once

#include <cstdint>

namespace vkllm::cpu {

// Token t's row of a strided activation.
struct SeqRows {
  float* p = nullptr;
  uint64_t stride = 0;
  float* row(uint32_t t) const { return p + t * stride; }
};

// The causal conv + SiLU of channels [begin, end) over n_tokens tokens: x and out start at the
// sequence's first token; w is [channels][kernel] (channel c's taps contiguous, oldest input
// first); state holds (kernel - 1) rows of `channels` floats, oldest first, read as zeros when
// `fresh` (the sequence starts at position 0) and left holding the last kernel - 1 inputs.
// bias (Mamba-2's, one per channel; nullptr: none) joins the sum before the SiLU.
void ssm_conv(SeqRows x, SeqRows out, const float* w, float* state, uint32_t channels,
              uint32_t kernel, uint32_t n_tokens, bool fresh, uint32_t begin, uint32_t end,
              const float* bias = nullptr);

struct DeltaNetHeadArgs {
  SeqRows qkv;          // the sequence's conv output Q|K|V rows
  SeqRows alpha, beta;  // raw gates, n_v_heads per token
  SeqRows out;          // n_v_heads x head_dim per token
  uint32_t n_k_heads = 0, n_v_heads = 0, head_dim = 0;
  float dt_bias = 0.f, a = 0.f;  // this head's Weight::SsmDt and Weight::SsmA values
  float eps = 1e-6f;
  bool grouped = false;  // runtime::DeltaNetSpec::grouped (Qwen3-Next's head layout)
};

// Value head h's gated delta rule over n_tokens tokens (runtime::DeltaNetSpec); state is its
// head_dim x head_dim matrix, row j holding S[.][j] (ggml's layout: state[j * d + i] = S[i][j]),
// zeroed first when `fresh`.
void delta_net_head(const DeltaNetHeadArgs& a, uint32_t h, float* state, uint32_t n_tokens,
                    bool fresh);

// The same rule in its chunked parallel form (the WY representation of the Gated DeltaNet paper,
// llama.cpp's build_delta_net_chunking): per chunk of kDeltaNetChunk tokens (the last may be
// shorter), with G_t the cumulative log decay within the chunk, the new values delta solve
// (I + A) delta = beta (V - e^G K S) with A[t][s] = beta_t e^(G_t - G_s) k_t . k_s (s < t), the
// outputs are e^G Q S + (e^(G_t - G_s) q_t . k_s, s <= t) delta, and the state goes on as
// e^(G_last) S + sum_t e^(G_last - G_t) k_t delta_t^T. Products of whole chunks instead of a walk
// over the state per token: for prefill. Same state in and out as delta_net_head, so the two mix
// freely across steps; equal up to float rounding. The CPU's chunks are 32 tokens (64, as
// llama.cpp's and the Vulkan kernel's, was 15% slower here: the C x C work grows with the chunk);
// its products run as sums of state rows, which vectorise. On an EPYC core at head size 128 it
// takes 6.7-8.1 us a token and head from 8 tokens on, the recurrent form 5.0 (its dot products
// in eight partial sums, fused with the state's update): the CPU backend runs the recurrent form
// unless told otherwise (runtime::delta_net_chunk_min_for). The chunked form pays where products
// of whole chunks are cheap (tensor cores, shaders/delta_net_chunked.comp).
inline constexpr uint32_t kDeltaNetChunk = 32;
void delta_net_head_chunked(const DeltaNetHeadArgs& a, uint32_t h, float* state, uint32_t n_tokens,
                            bool fresh);

// x[r] *= act(gate[r]) over rows [begin, end) of n (x may be gate: Relu then squares relu(x));
// per_row: gate row r is one value, x[r] *= act(g[r]) (a shared expert's gate).
enum class GateKind : uint8_t { Sigmoid, Silu, Relu };
void gate_rows(GateKind act, SeqRows x, SeqRows gate, uint32_t n, uint32_t begin, uint32_t end,
               bool per_row = false);

}  // namespace vkllm::cpu
