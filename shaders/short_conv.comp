#version 450
// LFM2's gated short convolution (runtime::ShortConvSpec, the CPU's engine/cpu/short_conv.cpp):
// for each token t of a sequence, per channel c, with v = B * X,
//   out[t][c] = C[t][c] * sum_k w[c][k] * v[t - (L-1) + k]
// where the values before the step's first token come from the sequence's recurrent state
// ((L-1) rows of n_embd, oldest first; zero for a sequence starting at position 0), which then
// holds the last L-1 values of v. One invocation walks one channel of one sequence through its
// tokens in order, its window in registers, so chunked prefill equals token-by-token decoding
// and the state is read before it is written by the same invocation only. Grid: x covers the
// channels, y = sequence (kv_meta.glsl: seq_q_start / seq_q_len / seq_kv_len / seq_state).
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
} p;

const uint kMax = 8u;  // model::kMaxShortConvLength

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
  float win[kMax];
  float w[kMax];
  if (live) {
    for (uint k = 0u; k < d; ++k) win[k] = fresh ? 0.0 : state[base + k * p.n_embd + c];
    for (uint k = 0u; k < p.l_cache; ++k) w[k] = taps[c * p.l_cache + k];
  }
  for (uint t = 0u; t < q_len; ++t) {
    float o = 0.0;
    if (live) {
      const uint row = (t0 + t) * p.bcx_stride;
      win[d] = bcx[row + c] * bcx[row + 2u * p.n_embd + c];
      float sum = 0.0;
      for (uint k = 0u; k < p.l_cache; ++k) sum += win[k] * w[k];
      o = bcx[row + p.n_embd + c] * sum;
      outv[(t0 + t) * p.out_stride + c] = o;
      for (uint k = 0u; k < d; ++k) win[k] = win[k + 1u];
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
  if (live)
    for (uint k = 0u; k < d; ++k) state[base + k * p.n_embd + c] = win[k];
}
