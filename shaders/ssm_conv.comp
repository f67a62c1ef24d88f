#version 450
// The causal conv of Qwen3.5's DeltaNet and of Mamba-2 (runtime::SsmConvSpec, the CPU's
// engine/cpu/delta_net.cpp): for each token t of a sequence, per channel c,
//   out[t][c] = silu(sum_k w[c][k] * x[t - (K-1) + k][c] + bias[c])   (Mamba-2's bias; 0 else)
// where the inputs before the step's first token come from the sequence's recurrent state
// ((K-1) rows of `channels`, oldest first; zero for a sequence starting at position 0), which
// then holds the last K-1 inputs. The outputs are not a recurrence, only the state is: the grid's
// z splits each sequence's tokens into blocks of TOKENS, one invocation walking one channel
// through one block with its window in registers (the window's first K-1 inputs from the rows
// before the block, or the state before the step's first token). A Qwen3.5-4B layer's conv over
// 512 tokens took 0.37 ms walked by one invocation per channel, twice its input projection.
// The state is rewritten by `phase` 1 (grid z = 1), after a barrier, wherever a step spans more
// than one block (block 0 reads the old state while another block would write the new); with
// one block, phase 0 writes it itself. x and out are parts of one activation buffer (offsets in
// floats; the parts need no storage-buffer alignment). A sequence that keeps its states after
// each token (kv_meta.glsl's seq_capture: a speculative step's) has each token's window written
// to its captured slot as the walk passes it. Grid: x covers the channels, y =
// sequence, z = token blocks.

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
  uint phase;  // 0: outputs of block z (and the state when one block covers every sequence); 1: state
} p;

const uint kMax = 8u;  // model::kMaxShortConvLength
const uint TOKENS = 16u;  // tokens per invocation (delta_net_ops.cpp's kConvTokens)

// Input j of the sequence (j < 0: the carried state's row d + j, zero when fresh).
float conv_input(int j, uint t0, uint base, uint c, bool fresh, uint d) {
  if (j >= 0) return act[p.x_off + (t0 + uint(j)) * p.stride + c];
  return fresh ? 0.0 : state[base + uint(int(d) + j) * p.channels + c];
}

void main() {
  const uint c = gl_GlobalInvocationID.x;
  const uint seq = gl_WorkGroupID.y;
  if (c >= p.channels || seq >= p.n_seqs) return;
  const uint q_len = meta_seq_q_len(p.n_tokens, p.n_seqs, seq);
  const uint t0 = meta_seq_q_start(p.n_tokens, p.n_seqs, seq);
  const bool fresh = meta_seq_kv_len(p.n_tokens, p.n_seqs, seq) == q_len;
  const uint base = meta_seq_state(p.n_tokens, p.n_seqs, seq) * p.slot_floats + p.layer_offset;
  const uint d = p.kernel - 1u;
  if (p.phase == 1u) {
    // The last K-1 inputs, oldest first; state rows still needed are read before they are
    // overwritten (new row k reads old row k + q_len, k ascending).
    for (uint k = 0u; k < d; ++k)
      state[base + k * p.channels + c] = conv_input(int(q_len) - int(d) + int(k), t0, base, c, fresh, d);
    return;
  }
  const uint first = gl_WorkGroupID.z * TOKENS;
  if (first >= q_len) return;
  const uint last = min(q_len, first + TOKENS);
  float win[kMax];
  for (uint k = 0u; k < d; ++k) win[k] = conv_input(int(first) - int(d) + int(k), t0, base, c, fresh, d);
  float w[kMax];
  for (uint k = 0u; k < p.kernel; ++k) w[k] = taps[c * p.kernel + k];
  const float b = p.has_bias != 0u ? bias[c] : 0.0;
  const uint capture = meta_seq_capture(p.n_tokens, p.n_seqs, seq);
  for (uint t = first; t < last; ++t) {
    const uint row = (t0 + t) * p.stride;
    win[d] = act[p.x_off + row + c];
    float sum = 0.0;
    for (uint k = 0u; k < p.kernel; ++k) sum += win[k] * w[k];
    sum += b;
    act[p.out_off + row + c] = sum / (1.0 + exp(-sum));
    for (uint k = 0u; k < d; ++k) win[k] = win[k + 1u];
    if (capture != 0u && t + 1u < q_len) {
      const uint kept = (capture + t) * p.slot_floats + p.layer_offset;
      for (uint k = 0u; k < d; ++k) state[kept + k * p.channels + c] = win[k];
    }
  }
  // One block per sequence (gl_NumWorkGroups.z == 1): its window ends as the new state.
  if (gl_NumWorkGroups.z == 1u)
    for (uint k = 0u; k < d; ++k) state[base + k * p.channels + c] = win[k];
}
