#version 450
// The causal conv of Qwen3.5's DeltaNet and of Mamba-2 (runtime::SsmConvSpec, the CPU's
// engine/cpu/delta_net.cpp): for each token t of a sequence, per channel c,
//   out[t][c] = silu(sum_k w[c][k] * x[t - (K-1) + k][c] + bias[c])   (Mamba-2's bias; 0 else)
// where the inputs before the step's first token come from the sequence's recurrent state
// ((K-1) rows of `channels`, oldest first; zero for a sequence starting at position 0), which
// then holds the last K-1 inputs. One invocation walks one channel of one sequence through its
// tokens in order, its window in registers (as shaders/short_conv.comp). x and out are parts of
// one activation buffer (offsets in floats; the parts need no storage-buffer alignment).
// Grid: x covers the channels, y = sequence.

#define META_BINDING 1
#include "kv_meta.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer Act { float act[]; };
layout(std430, binding = 2) readonly buffer Taps { float taps[]; };
layout(std430, binding = 3) buffer State { float state[]; };
layout(std430, binding = 4) readonly buffer Bias { float bias[]; };

layout(push_constant) uniform Params {
  uint channels;
  uint kernel;  // 2..kMax
  uint n_tokens;
  uint n_seqs;
  uint stride;  // floats from one token's row to the next (x and out)
  uint x_off;
  uint out_off;
  uint slot_floats;   // one slot's states, every recurrent layer's
  uint layer_offset;  // this layer's state within a slot (the conv's part comes first)
  uint has_bias;
} p;

const uint kMax = 8u;  // model::kMaxShortConvLength

void main() {
  const uint c = gl_GlobalInvocationID.x;
  const uint seq = gl_WorkGroupID.y;
  if (c >= p.channels || seq >= p.n_seqs) return;
  const uint q_len = meta_seq_q_len(p.n_tokens, p.n_seqs, seq);
  const uint t0 = meta_seq_q_start(p.n_tokens, p.n_seqs, seq);
  const bool fresh = meta_seq_kv_len(p.n_tokens, p.n_seqs, seq) == q_len;
  const uint base = meta_seq_state(p.n_tokens, p.n_seqs, seq) * p.slot_floats + p.layer_offset;
  const uint d = p.kernel - 1u;
  float win[kMax];
  for (uint k = 0u; k < d; ++k) win[k] = fresh ? 0.0 : state[base + k * p.channels + c];
  float w[kMax];
  for (uint k = 0u; k < p.kernel; ++k) w[k] = taps[c * p.kernel + k];
  const float b = p.has_bias != 0u ? bias[c] : 0.0;
  for (uint t = 0u; t < q_len; ++t) {
    const uint row = (t0 + t) * p.stride;
    win[d] = act[p.x_off + row + c];
    float sum = 0.0;
    for (uint k = 0u; k < p.kernel; ++k) sum += win[k] * w[k];
    sum += b;
    act[p.out_off + row + c] = sum / (1.0 + exp(-sum));
    for (uint k = 0u; k < d; ++k) win[k] = win[k + 1u];
  }
  for (uint k = 0u; k < d; ++k) state[base + k * p.channels + c] = win[k];
}
