#version 450
// Qwen3.5's gated delta rule (runtime::DeltaNetSpec) in its chunked parallel form, for prefill
// (shaders/delta_net.comp is the recurrent form; engine/cpu/delta_net.h's delta_net_head_chunked
// the CPU's, which says the algebra). Per chunk of C tokens of one (value head, sequence), with G_t
// the cumulative log decay within the chunk and q, k L2-normalised:
//   A[t][s] = beta_t e^(G_t - G_s) k_t . k_s (s < t)     P[t][s] = e^(G_t - G_s) q_t . k_s (s <= t)
//   (I + A) delta = beta (V - e^G K S)                      (forward substitution)
//   out = e^G Q S + P delta,   S <- e^(G_last) S + sum_t e^(G_last - G_t) k_t delta_t^T
// Column j of S meets only v[j] and out[j], so a workgroup owns a block of B columns of one
// (value head, sequence): it recomputes the chunk's C x C matrices (shared by every column block)
// and keeps its columns of the state in registers across the sequence's chunks. Shared memory, in
// phases (26 KiB: lavapipe allows 32): R1 holds the state block (the products K S, Q S), then A,
// then P, then the chunk's decayed keys; R2 the K and Q tiles, then delta.
// Sequences of fewer than chunk_min tokens are left to the recurrent kernel (both are recorded
// where a step mixes them). Grid: x = value head, y = sequence, z = column blocks.

#extension GL_EXT_control_flow_attributes : enable

#define META_BINDING 1
#include "kv_meta.glsl"

const uint C = 64;     // tokens per chunk
const uint B = 32;     // state columns per workgroup
const uint DT = 16;    // key dimensions per tile of the Gram products
const uint MAXD = 128; // the largest head this kernel takes (the host checks)
const uint WG = 256;
layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer In { float act[]; };
layout(std430, binding = 2) readonly buffer Dt { float dt[]; };
layout(std430, binding = 3) readonly buffer A { float a_log[]; };
layout(std430, binding = 4) buffer State { float state[]; };
layout(std430, binding = 5) buffer Out { float outv[]; };

layout(push_constant) uniform Params {
  uint n_tokens;
  uint n_seqs;
  uint n_k_heads;
  uint n_v_heads;
  uint head_dim;
  uint stride;
  uint qkv_off;
  uint alpha_off;
  uint beta_off;
  uint out_off;
  uint out_stride;
  uint slot_floats;
  uint state_offset;
  float eps;
  uint grouped;
  uint chunk_min;  // sequences of at least this many tokens take this kernel
} p;

shared float R1[MAXD * B];  // = C * C = 32 * MAXD
// The K and Q tiles as [DT][C + 4] (a token's 4 rows a vec4, rows padded off each other's
// banks), later delta as [C][B] floats.
const uint TROW = C / 4u + 1u;  // vec4s per tile row
shared vec4 R2[2u * DT * TROW];  // >= C * B / 4
shared float Gs[C], Bs[C], Nk[C], Nq[C];

float softplus(float x) { return x > 20.0 ? x : log(1.0 + exp(x)); }
// Delta's columns 2 tc, 2 tc + 1 of row t.
vec2 delta_pair(uint t, uint tc) {
  const vec4 w = R2[t * (B / 4u) + tc / 2u];
  return (tc & 1u) != 0u ? w.zw : w.xy;
}

void main() {
  const uint h = gl_WorkGroupID.x;
  const uint seq = gl_WorkGroupID.y;
  const uint j0 = gl_WorkGroupID.z * B;
  const uint tid = gl_LocalInvocationID.x;
  const uint d = p.head_dim;
  if (h >= p.n_v_heads || seq >= p.n_seqs || j0 >= d) return;  // the whole workgroup
  const uint q_len = meta_seq_q_len(p.n_tokens, p.n_seqs, seq);
  // A sequence that keeps its states after each token is the recurrent kernel's.
  if (q_len < p.chunk_min || meta_seq_capture(p.n_tokens, p.n_seqs, seq) != 0u) return;
  const uint t_first = meta_seq_q_start(p.n_tokens, p.n_seqs, seq);
  const bool fresh = meta_seq_kv_len(p.n_tokens, p.n_seqs, seq) == q_len;
  const uint base = meta_seq_state(p.n_tokens, p.n_seqs, seq) * p.slot_floats + p.state_offset +
                    h * d * d;  // S[i][j] at base + j * d + i
  const uint ratio = p.n_v_heads / p.n_k_heads;
  const uint kh = p.grouped != 0u ? h / ratio : h % p.n_k_heads;
  const uint ab = p.grouped != 0u ? (h / ratio) * 2u * ratio + h % ratio : h;
  const uint key_dim = p.n_k_heads * d;
  const float fd = float(d);
  const float dt_h = dt[h], a_h = a_log[h];

  // Thread layout: tr picks 4 chunk rows (tokens t = 4 tr + r), tc 4 columns of the C x C
  // matrices (s = 4 tc + c) and 2 state columns (jl = 2 tc + c); the state block's rows
  // i = 8 tr + r.
  const uint tr = tid / 16u, tc = tid % 16u;

  float S[8][2];
  [[unroll]] for (uint r = 0u; r < 8u; ++r) {
    [[unroll]] for (uint c = 0u; c < 2u; ++c) {
      const uint i = 8u * tr + r, j = j0 + 2u * tc + c;
      S[r][c] = 0.0;
      if (!fresh && i < d && j < d) S[r][c] = state[base + j * d + i];
    }
  }

  for (uint c0 = 0u; c0 < q_len; c0 += C) {
    const uint n = min(C, q_len - c0);
    const uint row0 = t_first + c0;  // the chunk's first token in the batch
    // The gates, and the state block where the Gram phase reads it.
    if (tid < C) {
      const uint t = tid;
      float g = 0.0, beta = 0.0;
      if (t < n) {
        const uint row = (row0 + t) * p.stride;
        g = softplus(act[p.alpha_off + row + ab] + dt_h) * a_h;
        beta = 1.0 / (1.0 + exp(-act[p.beta_off + row + ab]));
      }
      Nq[t] = g;  // the norms' place is free until the Gram phase ends
      Bs[t] = beta;
    }
    [[unroll]] for (uint r = 0u; r < 8u; ++r)
      [[unroll]] for (uint c = 0u; c < 2u; ++c) R1[(8u * tr + r) * B + 2u * tc + c] = S[r][c];
    barrier();
    if (tid < C) {  // G_t, each thread its own prefix: independent reads, no serial chain
      float g = 0.0;
      for (uint s = 0u; s <= tid; ++s) g += Nq[s];
      Gs[tid] = g;
    }

    // Gram phase, over tiles of DT key dimensions: raw k_t . k_s, q_t . k_s, (K S)[t][j],
    // (Q S)[t][j] and the squared norms, all scaled afterwards.
    float Am[4][4], Pm[4][4], KS[4][2], QS[4][2];
    [[unroll]] for (uint r = 0u; r < 4u; ++r) {
      [[unroll]] for (uint c = 0u; c < 4u; ++c) {
        Am[r][c] = 0.0;
        Pm[r][c] = 0.0;
      }
      [[unroll]] for (uint c = 0u; c < 2u; ++c) {
        KS[r][c] = 0.0;
        QS[r][c] = 0.0;
      }
    }
    float norm = 0.0;  // tid < C: |k_tid|^2; tid < 2C: |q_(tid - C)|^2
    // Coalesced reads of DT dimensions of a token's row, the next tile's in flight while this one
    // is multiplied.
    const uint LOADS = (C * DT) / WG;
    float kl[LOADS], ql[LOADS];
    [[unroll]] for (uint m = 0u; m < LOADS; ++m) {
      const uint idx = tid + m * WG, t = idx / DT, ii = idx % DT;
      ql[m] = 0.0;
      kl[m] = 0.0;
      if (t < n && ii < d) {  // no load past the batch's rows
        const uint at = p.qkv_off + (row0 + t) * p.stride + kh * d + ii;
        ql[m] = act[at];
        kl[m] = act[at + key_dim];
      }
    }
    for (uint d0 = 0u; d0 < d; d0 += DT) {
      [[unroll]] for (uint m = 0u; m < LOADS; ++m) {  // K at tile 0, Q at tile 1
        const uint idx = tid + m * WG, t = idx / DT, ii = idx % DT;
        R2[ii * TROW + t / 4u][t % 4u] = kl[m];
        R2[(DT + ii) * TROW + t / 4u][t % 4u] = ql[m];
      }
      barrier();
      if (d0 + DT < d) {
        [[unroll]] for (uint m = 0u; m < LOADS; ++m) {
          const uint idx = tid + m * WG, t = idx / DT, ii = d0 + DT + idx % DT;
          ql[m] = 0.0;
          kl[m] = 0.0;
          if (t < n && ii < d) {
            const uint at = p.qkv_off + (row0 + t) * p.stride + kh * d + ii;
            ql[m] = act[at];
            kl[m] = act[at + key_dim];
          }
        }
      }
      if (tid < 2u * C) {
        const uint t = tid % C, tile = tid < C ? 0u : DT;
        for (uint ii = 0u; ii < DT; ++ii) {
          const float x = R2[(tile + ii) * TROW + t / 4u][t % 4u];
          norm += x * x;
        }
      }
      if (4u * tr < n) {  // rows past the chunk's tokens stay zero
        for (uint ii = 0u; ii < DT; ++ii) {
          const vec4 kt = R2[ii * TROW + tr], qt = R2[(DT + ii) * TROW + tr];
          if (tc <= tr) {  // A and P are lower triangular
            const vec4 ks = R2[ii * TROW + tc];
            [[unroll]] for (uint c = 0u; c < 4u; ++c) {
              [[unroll]] for (uint r = 0u; r < 4u; ++r) {
                Am[r][c] += kt[r] * ks[c];
                Pm[r][c] += qt[r] * ks[c];
              }
            }
          }
          [[unroll]] for (uint c = 0u; c < 2u; ++c) {
            const float s = R1[(d0 + ii) * B + 2u * tc + c];
            [[unroll]] for (uint r = 0u; r < 4u; ++r) {
              KS[r][c] += kt[r] * s;
              QS[r][c] += qt[r] * s;
            }
          }
        }
      }
      barrier();
    }
    if (tid < 2u * C) {
      // The recurrent kernel's L2 norm; q also takes the output's 1/sqrt(head_dim).
      const float scale = 1.0 / sqrt(norm / fd + p.eps / fd) / sqrt(fd);
      if (tid < C)
        Nk[tid] = scale;
      else
        Nq[tid - C] = scale / sqrt(fd);
    }
    barrier();

    // A into R1 (the state block lives on in registers); P stays in registers. R = beta (v - e^G
    // K S) becomes delta in place.
    float Rm[4][2];
    [[unroll]] for (uint r = 0u; r < 4u; ++r) {
      const uint t = 4u * tr + r;
      const float gt = Gs[t], nk = Nk[t], nq = Nq[t], bt = Bs[t];
      [[unroll]] for (uint c = 0u; c < 4u; ++c) {
        const uint s = 4u * tc + c;
        const float decay = s <= t ? exp(gt - Gs[s]) : 0.0;
        R1[t * C + s] = s < t ? bt * decay * nk * Nk[s] * Am[r][c] : 0.0;
        Pm[r][c] = decay * nq * Nk[s] * Pm[r][c];
      }
      const float e = exp(gt);
      [[unroll]] for (uint c = 0u; c < 2u; ++c) {
        const uint j = j0 + 2u * tc + c;
        float v = 0.0;
        if (t < n && j < d) v = act[p.qkv_off + (row0 + t) * p.stride + 2u * key_dim + h * d + j];
        Rm[r][c] = bt * (v - e * nk * KS[r][c]);
        QS[r][c] *= e * nq;
      }
    }
    barrier();
    // (I + A) delta = R by forward substitution, four rows at a time: the threads of those rows
    // solve their 4 x 4 diagonal block and publish the rows into R2; the rows below take them out.
    const uint blocks = (n + 3u) / 4u;
    for (uint blk = 0u; blk < blocks; ++blk) {
      if (tr == blk) {
        [[unroll]] for (uint r = 1u; r < 4u; ++r) {
          [[unroll]] for (uint r2 = 0u; r2 < r; ++r2) {
            const float f = R1[(4u * blk + r) * C + 4u * blk + r2];
            [[unroll]] for (uint c = 0u; c < 2u; ++c) Rm[r][c] -= f * Rm[r2][c];
          }
        }
        [[unroll]] for (uint r = 0u; r < 4u; ++r) {
          const uint at = (4u * blk + r) * (B / 4u) + tc / 2u;
          if ((tc & 1u) != 0u)
            R2[at].zw = vec2(Rm[r][0], Rm[r][1]);
          else
            R2[at].xy = vec2(Rm[r][0], Rm[r][1]);
        }
      }
      barrier();
      if (tr > blk) {
        [[unroll]] for (uint r2 = 0u; r2 < 4u; ++r2) {
          const vec2 dv = delta_pair(4u * blk + r2, tc);
          const float d0v = dv.x, d1v = dv.y;
          [[unroll]] for (uint r = 0u; r < 4u; ++r) {
            const float f = R1[(4u * tr + r) * C + 4u * blk + r2];
            Rm[r][0] -= f * d0v;
            Rm[r][1] -= f * d1v;
          }
        }
      }
    }
    barrier();

    // out = e^G Q S + P delta (rows past n were never published: they are not read).
    [[unroll]] for (uint r = 0u; r < 4u; ++r)
      [[unroll]] for (uint c = 0u; c < 4u; ++c) R1[(4u * tr + r) * C + 4u * tc + c] = Pm[r][c];
    barrier();
    if (4u * tr < n) {
      const uint s_end = min(4u * tr + 4u, n);
      for (uint s = 0u; s < s_end; ++s) {
        const vec2 dv = delta_pair(s, tc);
        const float d0v = dv.x, d1v = dv.y;
        [[unroll]] for (uint r = 0u; r < 4u; ++r) {
          const float f = R1[(4u * tr + r) * C + s];
          QS[r][0] += f * d0v;
          QS[r][1] += f * d1v;
        }
      }
      [[unroll]] for (uint r = 0u; r < 4u; ++r) {
        const uint t = 4u * tr + r;
        [[unroll]] for (uint c = 0u; c < 2u; ++c) {
          const uint j = j0 + 2u * tc + c;
          if (t < n && j < d) outv[p.out_off + (row0 + t) * p.out_stride + h * d + j] = QS[r][c];
        }
      }
    }

    // S <- e^(G_last) S + sum_t (e^(G_last - G_t) k_t) delta_t^T, the decayed keys through R1
    // in halves of C / 2 tokens.
    const float g_last = Gs[n - 1u];
    const float e_last = exp(g_last);
    if (tid < C) Bs[tid] = Nk[tid] * exp(g_last - Gs[tid]);  // beta is spent: the keys' factors
    [[unroll]] for (uint r = 0u; r < 8u; ++r)
      [[unroll]] for (uint c = 0u; c < 2u; ++c) S[r][c] *= e_last;
    for (uint half0 = 0u; half0 < n; half0 += C / 2u) {
      barrier();
      for (uint m = 0u; m < (C / 2u) * MAXD / WG; ++m) {
        const uint idx = tid + m * WG, tt = idx / MAXD, i = idx % MAXD, t = half0 + tt;
        float kv = 0.0;
        if (t < n && i < d) kv = act[p.qkv_off + (row0 + t) * p.stride + key_dim + kh * d + i] * Bs[t];
        R1[idx] = kv;
      }
      barrier();
      const uint tt_end = min(C / 2u, n - half0);
      for (uint tt = 0u; tt < tt_end; ++tt) {
        const uint t = half0 + tt;
        const vec2 dv = delta_pair(t, tc);
        const float d0v = dv.x, d1v = dv.y;
        [[unroll]] for (uint r = 0u; r < 8u; ++r) {
          const float kv = R1[tt * MAXD + 8u * tr + r];
          S[r][0] += kv * d0v;
          S[r][1] += kv * d1v;
        }
      }
    }
    barrier();  // before the next chunk's gates and state block overwrite Gs, R1
  }

  [[unroll]] for (uint r = 0u; r < 8u; ++r) {
    [[unroll]] for (uint c = 0u; c < 2u; ++c) {
      const uint i = 8u * tr + r, j = j0 + 2u * tc + c;
      if (i < d && j < d) state[base + j * d + i] = S[r][c];
    }
  }
}
