#version 450
// LFM2's gated short convolution (runtime::ShortConvSpec, the CPU's engine/cpu/short_conv.cpp):
// for each token t of a sequence, per channel c, with v = B * X,
//   out[t][c] = C[t][c] * sum_k w[c][k] * v[t - (L-1) + k]
// where the values before the step's first token come from the sequence's recurrent state
// ((L-1) rows of n_embd, oldest first; zero for a sequence starting at position 0), which then
// holds the last L-1 values of v. As shaders/ssm_conv.comp: the grid's z splits each sequence's
// tokens into blocks of TOKENS, one invocation walking one channel through one block with its
// window in registers (started from the values before the block, or the state); with several
// blocks `phase` 1 rewrites the state after a barrier. A sequence that keeps its states after
// each token (kv_meta.glsl's seq_capture: a speculative step's) has each token's window written
// to its captured slot as the walk passes it. Grid: x covers the channels, y = sequence
// (kv_meta.glsl: seq_q_start / seq_q_len / seq_kv_len / seq_state), z = token blocks.
// Q8_OUT: out is also written as q8 blocks (binding 5, q8_block.glsl) for the output
// projection's int8-dot matvec, saving its quantize dispatch and barrier (a tenth of an LFM2
// conv layer at batch 1); n_embd a multiple of 32, workgroup size a multiple of 32. Every
// invocation of a workgroup then walks the sequence's tokens, past n_embd too, for the barriers.

#define META_BINDING 1
#include "kv_meta.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Bcx { float bcx[]; };
layout(std430, binding = 2) readonly buffer Taps { float taps[]; };
layout(std430, binding = 3) buffer State { float state[]; };
layout(std430, binding = 4) writeonly buffer Out { float outv[]; };
#ifdef Q8_OUT
#extension GL_EXT_control_flow_attributes : enable
#define Q8_BINDING 5
#include "q8_block.glsl"
shared float conv_vals[gl_WorkGroupSize.x];
#endif

layout(push_constant) uniform Params {
  uint n_embd;
  uint l_cache;  // 2..kMax
  uint n_tokens;
  uint n_seqs;
  uint bcx_stride;  // floats from one token's B|C|X row to the next
  uint out_stride;
  uint slot_floats;  // one slot's states, every recurrent layer's
  uint layer_offset;  // this layer's state within a slot
  uint phase;  // 0: outputs of block z (and the state when one block covers every sequence); 1: state
} p;

const uint kMax = 8u;  // model::kMaxShortConvLength
const uint TOKENS = 16u;  // tokens per invocation (ops.cpp's kShortConvTokens)

// v = B * X of the sequence's input j (j < 0: the carried state's row d + j, zero when fresh).
float conv_input(int j, uint t0, uint base, uint c, bool fresh, uint d) {
  if (j >= 0) {
    const uint row = (t0 + uint(j)) * p.bcx_stride;
    return bcx[row + c] * bcx[row + 2u * p.n_embd + c];
  }
  return fresh ? 0.0 : state[base + uint(int(d) + j) * p.n_embd + c];
}

void main() {
  const uint c = gl_GlobalInvocationID.x;
  const uint seq = gl_WorkGroupID.y;
  const bool live = c < p.n_embd;
#ifndef Q8_OUT
  if (!live) return;
#endif
  const uint q_len = meta_seq_q_len(p.n_tokens, p.n_seqs, seq);
  const uint t0 = meta_seq_q_start(p.n_tokens, p.n_seqs, seq);
  const bool fresh = meta_seq_kv_len(p.n_tokens, p.n_seqs, seq) == q_len;
  const uint base = meta_seq_state(p.n_tokens, p.n_seqs, seq) * p.slot_floats + p.layer_offset;
  const uint d = p.l_cache - 1u;
  if (p.phase == 1u) {  // never with Q8_OUT: no barriers here
    // New row k reads old row k + q_len (k ascending) before it is overwritten.
    if (live)
      for (uint k = 0u; k < d; ++k)
        state[base + k * p.n_embd + c] =
            conv_input(int(q_len) - int(d) + int(k), t0, base, c, fresh, d);
    return;
  }
  const uint first = gl_WorkGroupID.z * TOKENS;
  if (first >= q_len) return;  // uniform across the workgroup
  const uint last = min(q_len, first + TOKENS);
  float win[kMax];
  float w[kMax];
  if (live) {
    for (uint k = 0u; k < d; ++k)
      win[k] = conv_input(int(first) - int(d) + int(k), t0, base, c, fresh, d);
    for (uint k = 0u; k < p.l_cache; ++k) w[k] = taps[c * p.l_cache + k];
  }
  const uint capture = meta_seq_capture(p.n_tokens, p.n_seqs, seq);
  for (uint t = first; t < last; ++t) {
    float o = 0.0;
    if (live) {
      const uint row = (t0 + t) * p.bcx_stride;
      win[d] = bcx[row + c] * bcx[row + 2u * p.n_embd + c];
      float sum = 0.0;
      for (uint k = 0u; k < p.l_cache; ++k) sum += win[k] * w[k];
      o = bcx[row + p.n_embd + c] * sum;
      outv[(t0 + t) * p.out_stride + c] = o;
      for (uint k = 0u; k < d; ++k) win[k] = win[k + 1u];
      if (capture != 0u && t + 1u < q_len) {
        const uint kept = (capture + t) * p.slot_floats + p.layer_offset;
        for (uint k = 0u; k < d; ++k) state[kept + k * p.n_embd + c] = win[k];
      }
    }
#ifdef Q8_OUT
    // The first invocation of each 32 gathers its block (blocks never straddle workgroups).
    const uint lid = gl_LocalInvocationID.x;
    conv_vals[lid] = o;
    barrier();
    if (live && (lid & 31u) == 0u) {
      vec4 v[8];
      [[unroll]] for (uint j = 0u; j < 8u; ++j)
        v[j] = vec4(conv_vals[lid + 4u * j], conv_vals[lid + 4u * j + 1u],
                    conv_vals[lid + 4u * j + 2u], conv_vals[lid + 4u * j + 3u]);
      q8_store_block(((t0 + t) * p.n_embd + c) / 32u, p.n_tokens * (p.n_embd / 32u), v);
    }
    barrier();
#endif
  }
  // One block per sequence (gl_NumWorkGroups.z == 1): its window ends as the new state.
  if (live && gl_NumWorkGroups.z == 1u)
    for (uint k = 0u; k < d; ++k) state[base + k * p.n_embd + c] = win[k];
}
