#version 450
// Mamba-2's selective scan in the chunked state-space-duality form (the Mamba-2 paper's SSD), for
// sequences bringing at least `chunked_from` tokens to a step; shaders/ssm_scan.comp (the
// recurrence) takes the others, the CPU's engine/cpu/mamba2_scan.cpp has both forms. One
// workgroup owns R rows of one head of one sequence (their d_state columns in shared memory) and
// walks the sequence's tokens Q at a time. Per token dt = softplus(dt + dt_bias[h]) and its log
// decay dt * A[h]; cs_t sums those over the chunk's tokens up to t, so with S the state carried
// into the chunk:
//   y_t  = exp(cs_t) C_t . S + sum_{j <= t} exp(cs_t - cs_j) dt_j (C_t . B_j) x_j + D x_t
//   S'   = exp(cs_end) S + sum_j exp(cs_end - cs_j) dt_j x_j B_j^T
// (g = h / (n_head / n_group) picks B and C). The products over d_state run in tiles of KT
// columns: a tile of the chunk's B and C is staged, every thread adds its (t, j) pairs of C_t . B_j
// and its (t, row) pairs of C_t . S, then the tile's state columns move over the chunk. Tokens
// past a partial chunk's end are staged as zeros with dt 0: they decay nothing and add nothing.
// Grid: x = head, y = sequence, z = blocks of R head rows; no subgroup operations.

#extension GL_EXT_control_flow_attributes : enable

#define META_BINDING 1
#include "kv_meta.glsl"

layout(local_size_x_id = 0) in;  // WG threads: WG % Q == 0 and Q % (WG / Q) == 0
layout(constant_id = 1) const uint Q = 32;    // tokens per chunk
layout(constant_id = 2) const uint R = 16;    // head rows per workgroup
layout(constant_id = 3) const uint KT = 64;   // state columns per tile, a multiple of 4
layout(constant_id = 4) const uint DSP = 128;  // d_state rounded up to a multiple of KT
layout(constant_id = 5) const uint WG = 256;

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
  uint stride;
  uint xbc_off;
  uint dt_off;
  uint out_off;
  uint out_stride;
  uint slot_floats;
  uint state_offset;
  uint chunked_from;  // sequences with fewer tokens are ssm_scan.comp's
} p;

// State columns and tiles are read as vec4s; rows are padded by one vec4, so the 8 threads of a
// quarter subgroup reading one column of 8 rows hit distinct banks.
const uint SROW = DSP / 4u + 1u;  // vec4s per state row
const uint TROW = KT / 4u + 1u;   // vec4s per staged B or C row
const uint TPQ = WG / Q;              // threads per token of the chunk
const uint JPT = Q / TPQ;             // (t, j) pairs a thread sums
const uint IPT = (R + TPQ - 1u) / TPQ;  // (t, row) pairs a thread sums

shared vec4 s_state[R * SROW];
shared vec4 s_b[Q * TROW];
shared vec4 s_c[Q * TROW];
shared float s_w[Q * (Q + 1u)];  // exp(cs_t - cs_j) dt_j (C_t . B_j), zero above the diagonal
shared float s_x[Q * R];         // x_j of the workgroup's rows
shared float s_u[Q * R];         // exp(cs_end - cs_j) dt_j x_j
shared float s_dt[Q];
shared float s_log[Q];           // dt_j * A
shared float s_cs[Q];

float softplus(float x) { return x > 20.0 ? x : log(1.0 + exp(x)); }

void main() {
  const uint h = gl_WorkGroupID.x;
  const uint seq = gl_WorkGroupID.y;
  const uint i0 = gl_WorkGroupID.z * R;
  const uint tid = gl_LocalInvocationID.x;
  const uint hd = p.head_dim, ds = p.d_state;
  // Uniform over the workgroup: all leave before any barrier.
  if (h >= p.n_head || seq >= p.n_seqs || i0 >= hd) return;
  const uint q_len = meta_seq_q_len(p.n_tokens, p.n_seqs, seq);
  // A sequence that keeps its states after each token is the recurrence's (ssm_scan.comp).
  if (q_len < p.chunked_from || q_len == 0u || meta_seq_capture(p.n_tokens, p.n_seqs, seq) != 0u)
    return;
  const uint t0 = meta_seq_q_start(p.n_tokens, p.n_seqs, seq);
  const bool fresh = meta_seq_kv_len(p.n_tokens, p.n_seqs, seq) == q_len;
  const uint base = meta_seq_state(p.n_tokens, p.n_seqs, seq) * p.slot_floats + p.state_offset +
                    (h * hd + i0) * ds;
  const uint g = h / (p.n_head / p.n_group);
  const uint d_inner = p.n_head * hd;
  const uint b_off = p.xbc_off + d_inner + g * ds;
  const uint c_off = p.xbc_off + d_inner + p.n_group * ds + g * ds;
  const float a = a_decay[h], d = d_skip[h], bias = dt_bias[h];
  const uint rows = min(R, hd - i0);

  for (uint e = tid; e < R * DSP; e += WG) {
    const uint r = e / DSP, k = e % DSP;
    s_state[r * SROW + k / 4u][k % 4u] =
        (fresh || r >= rows || k >= ds) ? 0.0 : state[base + r * ds + k];
  }
  // This thread's token of the chunk, and its pairs' other indices.
  const uint t = tid / TPQ, lane = tid % TPQ;

  for (uint c0 = 0u; c0 < q_len; c0 += Q) {
    const uint n = min(Q, q_len - c0);
    barrier();  // the last chunk's readers are done
    if (tid < Q) {
      const float dt = tid < n ? softplus(act[p.dt_off + (t0 + c0 + tid) * p.stride + h] + bias)
                               : 0.0;
      s_dt[tid] = dt;
      s_log[tid] = dt * a;
    }
    for (uint e = tid; e < Q * R; e += WG) {
      const uint j = e / R, r = e % R;
      s_x[e] = (j < n && r < rows) ? act[p.xbc_off + (t0 + c0 + j) * p.stride + h * hd + i0 + r]
                                    : 0.0;
    }
    barrier();
    if (tid < Q) {
      float cum = 0.0;
      for (uint m = 0u; m <= tid; ++m) cum += s_log[m];
      s_cs[tid] = cum;
    }
    barrier();
    const float cs_end = s_cs[Q - 1u], decay = exp(cs_end);
    for (uint e = tid; e < Q * R; e += WG) {
      const uint j = e / R;
      s_u[e] = exp(cs_end - s_cs[j]) * s_dt[j] * s_x[e];
    }

    float gsum[JPT], zsum[IPT];
    [[unroll]] for (uint m = 0u; m < JPT; ++m) gsum[m] = 0.0;
    [[unroll]] for (uint m = 0u; m < IPT; ++m) zsum[m] = 0.0;
    for (uint k0 = 0u; k0 < DSP; k0 += KT) {
      barrier();  // the last tile's state moves are done, s_u is written
      for (uint e = tid; e < Q * KT / 4u; e += WG) {
        const uint j = e / (KT / 4u), k = k0 + (e % (KT / 4u)) * 4u;
        const uint row = (t0 + c0 + j) * p.stride + k;
        vec4 b = vec4(0.0), c = vec4(0.0);
        if (j < n) {
          [[unroll]] for (uint q = 0u; q < 4u; ++q) {
            if (k + q < ds) {
              b[q] = act[b_off + row + q];
              c[q] = act[c_off + row + q];
            }
          }
        }
        s_b[j * TROW + e % (KT / 4u)] = b;
        s_c[j * TROW + e % (KT / 4u)] = c;
      }
      barrier();
      for (uint k = 0u; k < KT / 4u; ++k) {
        const vec4 c = s_c[t * TROW + k];
        // Blocks of j wholly above the diagonal are skipped (uniform over the TPQ threads of t).
        [[unroll]] for (uint m = 0u; m < JPT; ++m) {
          if (m * TPQ <= t) gsum[m] += dot(c, s_b[(lane + m * TPQ) * TROW + k]);
        }
        [[unroll]] for (uint m = 0u; m < IPT; ++m) {
          const uint r = lane + m * TPQ;
          if (r < R) zsum[m] += dot(c, s_state[r * SROW + k0 / 4u + k]);
        }
      }
      barrier();  // every C_t . S of the tile read the state before it moves
      for (uint e = tid; e < R * KT / 4u; e += WG) {
        const uint r = e / (KT / 4u), k = e % (KT / 4u);
        vec4 st = s_state[r * SROW + k0 / 4u + k] * decay;
        for (uint j = 0u; j < n; ++j) st += s_u[j * R + r] * s_b[j * TROW + k];
        s_state[r * SROW + k0 / 4u + k] = st;
      }
    }
    [[unroll]] for (uint m = 0u; m < JPT; ++m) {
      const uint j = lane + m * TPQ;
      s_w[t * (Q + 1u) + j] = j <= t ? gsum[m] * exp(s_cs[t] - s_cs[j]) * s_dt[j] : 0.0;
    }
    barrier();
    if (t < n) {
      const float carried = exp(s_cs[t]);
      [[unroll]] for (uint m = 0u; m < IPT; ++m) {
        const uint r = lane + m * TPQ;
        if (r < rows) {
          float y = carried * zsum[m] + d * s_x[t * R + r];
          for (uint j = 0u; j <= t; ++j) y += s_w[t * (Q + 1u) + j] * s_x[j * R + r];
          outv[p.out_off + (t0 + c0 + t) * p.out_stride + h * hd + i0 + r] = y;
        }
      }
    }
  }
  barrier();
  for (uint e = tid; e < R * DSP; e += WG) {
    const uint r = e / DSP, k = e % DSP;
    if (r < rows && k < ds) state[base + r * ds + k] = s_state[r * SROW + k / 4u][k % 4u];
  }
}
