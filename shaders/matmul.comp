#version 450
// Prefill matrix x matrix: y[m][n] (+)= sum_k W[n][k] * x[m][k] for M token rows of x. W is a
// ggml weight tensor [K contiguous, N rows] in its block format (TYPE_* define); x and y are f32.
//
// Portable shared-memory tiling: a workgroup owns a BN (weight rows) x BM (tokens) output tile.
// Per BK = 32 slice of K it decodes the BN x 32 weight tile once into shared memory (so each
// weight is dequantized once per tile, not once per token) and stages the BM x 32 activation
// tile beside it; each thread then accumulates a TN x TM register block from the two tiles.
// Threads of one row of the thread grid own rows tn, tn + BN/TN, ... so shared reads and global
// stores are unit-stride across a subgroup.

#extension GL_EXT_control_flow_attributes : enable

#include "dequant_weights.glsl"

#define BK 32u

layout(local_size_x_id = 0) in;                // must equal (BM / TM) * (BN / TN)
layout(constant_id = 1) const uint BM = 64u;   // tokens per tile
layout(constant_id = 2) const uint BN = 64u;   // weight rows per tile
layout(constant_id = 3) const uint TM = 4u;    // tokens per thread
layout(constant_id = 4) const uint TN = 4u;    // weight rows per thread

layout(std430, binding = 1) readonly buffer X { vec4 xv[]; };
layout(std430, binding = 2) buffer Y { float y[]; };

layout(push_constant) uniform Params {
  uint n_rows;    // N
  uint k;         // K: a multiple of QK
  uint n_cols;    // M: tokens
  uint x_stride;  // elements between token rows of x (a multiple of 4)
  uint y_stride;  // elements between token rows of y
  uint w_off;     // byte offset of W in binding 0 (a multiple of 16)
  uint x_off;     // element offset of x in binding 1 (a multiple of 4)
  uint y_off;     // element offset of y in binding 2
  uint flags;     // bit 0: add into y instead of overwriting it (fused residual add)
#ifdef MOE
  uint expert_bytes;  // bytes between the experts of W (expert e at w_off + e * expert_bytes)
  uint n_used;        // pairs per token (x rows are tokens unless bit 3 of flags)
#endif
} p;

#include "moe_gemm_rows.glsl"

// k-major tiles, rows padded by one float against bank conflicts on the transposed stores.
shared float w_tile[BK * (BN + 1u)];
shared float x_tile[BK * (BM + 1u)];

void main() {
  dequant_init();

  const uint tid = gl_LocalInvocationID.x;
  const uint n0 = gl_WorkGroupID.x * BN;
  const uint m0 = gl_WorkGroupID.y * BM;
  // Grouped expert products: this tile's pairs (an expert with fewer pairs exits here, before
  // any barrier); the first barrier below publishes them.
  if (!moe_tile_begin(m0, BM)) return;
  const uint threads_n = BN / TN;
  const uint tn = tid % threads_n;
  const uint tm = tid / threads_n;
  const uint blocks_per_row = p.k / QK;

  float acc[TM * TN];
  [[unroll]] for (uint i = 0u; i < TM * TN; ++i) acc[i] = 0.0;

  for (uint k0 = 0u; k0 < p.k; k0 += BK) {
    barrier();  // previous slice fully consumed (and the lookup tables written, on entry)

    // Weight tile: BN rows x BK/UNIT decode units (the units of one aligned 32-wide window).
    for (uint t = tid; t < BN * (BK / uint(UNIT)); t += gl_WorkGroupSize.x) {
      const uint nl = t % BN;
      const uint u = k0 / uint(UNIT) + t / BN;  // unit index along the row
      const uint kb = u / (QK / uint(UNIT));
      const uint ub = u % (QK / uint(UNIT));
      const uint n = n0 + nl;
      vec4 w[UNIT / 4];
      if (n < p.n_rows && kb * QK < p.k) {
        dequant_unit(W_OFF + (n * blocks_per_row + kb) * QBYTES, ub, w);
      } else {
        [[unroll]] for (uint v = 0u; v < uint(UNIT / 4); ++v) w[v] = vec4(0.0);
      }
      [[unroll]] for (uint v = 0u; v < uint(UNIT / 4); ++v) {
        const uint kl = kb * QK + unit_pos(ub, v) - k0;
        const uint base = kl * (BN + 1u) + nl;
        w_tile[base] = w[v].x;
        w_tile[base + (BN + 1u)] = w[v].y;
        w_tile[base + 2u * (BN + 1u)] = w[v].z;
        w_tile[base + 3u * (BN + 1u)] = w[v].w;
      }
    }

    // Activation tile: BM tokens x BK, read as vec4 along K.
    for (uint t = tid; t < BM * (BK / 4u); t += gl_WorkGroupSize.x) {
      const uint ml = t / (BK / 4u);
      const uint kl = (t % (BK / 4u)) * 4u;
      const uint m = m0 + ml;
      vec4 xs = vec4(0.0);
      if (m < N_COLS && k0 + kl < p.k) xs = xv[(p.x_off + X_ROW(m) * p.x_stride + k0 + kl) >> 2];
      const uint base = kl * (BM + 1u) + ml;
      x_tile[base] = xs.x;
      x_tile[base + (BM + 1u)] = xs.y;
      x_tile[base + 2u * (BM + 1u)] = xs.z;
      x_tile[base + 3u * (BM + 1u)] = xs.w;
    }
    barrier();

    [[unroll]] for (uint kk = 0u; kk < BK; ++kk) {
      float a[TN];
      float b[TM];
      [[unroll]] for (uint i = 0u; i < TN; ++i) a[i] = w_tile[kk * (BN + 1u) + tn + i * threads_n];
      [[unroll]] for (uint j = 0u; j < TM; ++j)
        b[j] = x_tile[kk * (BM + 1u) + tm + j * (BM / TM)];
      [[unroll]] for (uint j = 0u; j < TM; ++j)
        [[unroll]] for (uint i = 0u; i < TN; ++i) acc[j * TN + i] = fma(a[i], b[j], acc[j * TN + i]);
    }
  }

  [[unroll]] for (uint j = 0u; j < TM; ++j) {
    const uint m = m0 + tm + j * (BM / TM);
    if (m >= N_COLS) continue;
    [[unroll]] for (uint i = 0u; i < TN; ++i) {
      const uint n = n0 + tn + i * threads_n;
      if (n < p.n_rows) {
        const uint at = p.y_off + Y_ROW(m) * p.y_stride + n;
        y[at] = ((p.flags & 1u) != 0u ? y[at] : 0.0) + acc[j * TN + i];
      }
    }
  }
}
