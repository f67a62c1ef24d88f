#version 450
// Mamba-2's selective scan (runtime::SsmScanSpec, the CPU's engine/cpu/mamba2_scan.cpp), the
// recurrent form. Head h's state is head_dim rows of d_state floats; row i (contiguous in the
// state buffer) only ever meets x[i] and out[i], so rows are independent: one subgroup owns one
// row of one (head, sequence) and keeps it in registers (ROWS values a lane, state index
// k = lane + r * subgroup size) while it walks the sequence's tokens in order, so chunked prefill
// equals token-by-token decoding and the state is read and written once per step. Per token:
//   dt' = softplus(dt[h] + dt_bias[h]), decay = exp(dt' * A[h])
//   s[k] = s[k] * decay + B[g][k] * x[i] * dt';  out[i] = sum_k s[k] C[g][k] + x[i] * D[h]
// with g = h / (n_head / n_group); the sum is one subgroupAdd. Sequences bringing at least
// chunked_from tokens are left to ssm_scan_chunked.comp (the chunked SSD form of the same scan),
// dispatched beside this one, unless the step keeps their states after each token (kv_meta.glsl's
// seq_capture: a speculative step's sequence), which this kernel writes as it walks. Grid: x = head, y = sequence, z = row blocks of the workgroup's
// subgroup count.

#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_EXT_control_flow_attributes : enable

#define META_BINDING 1
#include "kv_meta.glsl"

layout(local_size_x_id = 0) in;
// ceil(d_state / subgroup size): the host fixes the subgroup size the pipeline runs with.
layout(constant_id = 1) const uint ROWS = 4;

layout(std430, binding = 0) readonly buffer In { float act[]; };
layout(std430, binding = 2) readonly buffer DtBias { float dt_bias[]; };
layout(std430, binding = 3) readonly buffer A { float a_decay[]; };
layout(std430, binding = 4) readonly buffer D { float d_skip[]; };
layout(std430, binding = 5) buffer State { float state[]; };
layout(std430, binding = 6) buffer Out { float outv[]; };

layout(push_constant) uniform Params {
  uint n_tokens;
  uint n_seqs;
  uint n_head;
  uint head_dim;
  uint n_group;
  uint d_state;
  uint stride;  // floats from one token's row of xbc / dt to the next
  uint xbc_off;
  uint dt_off;
  uint out_off;
  uint out_stride;
  uint slot_floats;
  uint state_offset;  // this layer's scan state within a slot
  uint chunked_from;  // sequences with at least this many tokens are ssm_scan_chunked.comp's
} p;

float softplus(float x) { return x > 20.0 ? x : log(1.0 + exp(x)); }

void main() {
  const uint h = gl_WorkGroupID.x;
  const uint seq = gl_WorkGroupID.y;
  const uint lanes = gl_SubgroupSize;
  const uint lane = gl_SubgroupInvocationID;
  const uint i = gl_WorkGroupID.z * gl_NumSubgroups + gl_SubgroupID;
  const uint hd = p.head_dim, ds = p.d_state;
  // Whole subgroups leave together; a row past the head joins no reduction of another.
  if (h >= p.n_head || seq >= p.n_seqs || i >= hd) return;
  const uint q_len = meta_seq_q_len(p.n_tokens, p.n_seqs, seq);
  const uint capture = meta_seq_capture(p.n_tokens, p.n_seqs, seq);
  if (q_len >= p.chunked_from && capture == 0u) return;
  const uint t0 = meta_seq_q_start(p.n_tokens, p.n_seqs, seq);
  const bool fresh = meta_seq_kv_len(p.n_tokens, p.n_seqs, seq) == q_len;
  const uint base = meta_seq_state(p.n_tokens, p.n_seqs, seq) * p.slot_floats + p.state_offset +
                    (h * hd + i) * ds;
  const uint g = h / (p.n_head / p.n_group);
  const uint d_inner = p.n_head * hd;
  const uint b_off = d_inner + g * ds;
  const uint c_off = d_inner + p.n_group * ds + g * ds;
  const float a = a_decay[h], d = d_skip[h], bias = dt_bias[h];

  float s[ROWS];
  [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
    const uint k = lane + r * lanes;
    s[r] = (fresh || k >= ds) ? 0.0 : state[base + k];
  }
  for (uint t = 0u; t < q_len; ++t) {
    const uint row = (t0 + t) * p.stride;
    const float dt = softplus(act[p.dt_off + row + h] + bias);
    const float decay = exp(dt * a);
    const float x = act[p.xbc_off + row + h * hd + i];
    const float x_dt = x * dt;
    float sum = 0.0;
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
      const uint k = lane + r * lanes;
      if (k < ds) {
        s[r] = s[r] * decay + act[p.xbc_off + row + b_off + k] * x_dt;
        sum += s[r] * act[p.xbc_off + row + c_off + k];
      }
    }
    sum = subgroupAdd(sum);
    if (lane == 0u) outv[p.out_off + (t0 + t) * p.out_stride + h * hd + i] = sum + x * d;
    if (capture != 0u && t + 1u < q_len) {
      const uint kept = (capture + t) * p.slot_floats + p.state_offset + (h * hd + i) * ds;
      [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
        const uint k = lane + r * lanes;
        if (k < ds) state[kept + k] = s[r];
      }
    }
  }
  [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
    const uint k = lane + r * lanes;
    if (k < ds) state[base + k] = s[r];
  }
}
