#version 450
// Prefill matrix x matrix on tensor cores (GL_NV_cooperative_matrix): y[m][n] (+)= sum_k
// W[n][k] * x[m][k], the same contract and push constants as matmul.comp (which stays the
// portable path for devices without cooperative matrices, lavapipe among them).
//
// A workgroup of WARPS_M x WARPS_N subgroups owns a BM (tokens) x BN (weight rows) output tile;
// each subgroup a (WMF x 16) x (WNF x 16) block of it, as WMF x WNF 16x16 f32 accumulators.
// Per BK slice of K the workgroup decodes the BN x BK weight tile to f16 and converts the BM x BK
// activation tile to f16 (or copies it, with X_F16), both k-contiguous in shared memory (so the
// weights are the column-major B operand and the activations the row-major A operand of one MMA).
// With two shared buffers (STAGES = 2) they alternate: while the subgroups multiply slice t from
// one, they decode slice t + 1 into the other, so one barrier per slice suffices and the global
// loads of one subgroup overlap the MMAs of the others. With one (STAGES = 1, half the shared
// memory, so a wider BK fits) a slice is decoded after the last one's MMAs, between two barriers.
//
// BK: a walk along K is bound by the round trips of its slice loads (on an H100 the loads alone
// took ~75% of the whole kernel's time), so a wider slice puts more bytes in flight per trip.
//
// Activations are clamped to the f16 range before the conversion (an overflow would turn the
// whole output row into inf/NaN); the accumulation stays f32.
//
// Split-K (bit 2 of flags): at batched-decode token counts the output has too few tiles to fill
// the GPU, and each workgroup's walk along K is bound by the latency of its slice loads. Then
// grid z splits K into k_split-wide ranges; workgroup z writes its partial tile to binding 3
// (whole fragments, at z * part_stride + m * part_ld + n, padded so no fragment crosses an edge)
// and matmul_splitk_reduce.comp sums the partials into y.

#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_NV_cooperative_matrix : enable
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : enable

#define DEQUANT_F16  // unit_decode_f16 for the pipelined loads
#include "dequant_weights.glsl"

layout(local_size_x_id = 0) in;  // WARPS_M * WARPS_N * subgroup size
layout(constant_id = 1) const uint WARPS_M = 2u;
layout(constant_id = 2) const uint WARPS_N = 4u;
layout(constant_id = 3) const uint WMF = 4u;  // 16-token fragments per subgroup
layout(constant_id = 4) const uint WNF = 2u;  // 16-row fragments per subgroup
// How a K slice reaches shared memory. 0: item by item (a round trip per item unless the driver
// reorders); 1: every global load of the slice first, then the conversions and stores (one round
// trip per slice); 2: software-pipelined, for weight types with split decoders (HAS_UNIT_RAW in
// dequant_weights.glsl) and f16 activations, else as 1: the raw words of slice s + 2 are loaded
// into registers while slice s multiplies and decoded one iteration later, so no subgroup waits
// on a global load.
layout(constant_id = 5) const uint BATCHED_LOADS = 1u;
// 1: binding 1 holds f16 activations (shaders/to_f16.comp: x_stride and x_off in halves, both
// multiples of 8, rows zero-padded to a multiple of 8) instead of f32 ones.
layout(constant_id = 6) const uint X_F16 = 0u;
// The pipelined loads decode weights in f16 (unit_decode_f16) rather than in f32 and convert.
layout(constant_id = 7) const bool DECODE_F16 = true;
layout(constant_id = 8) const uint BK = 32u;  // K per slice: 32, 64 or 128
layout(constant_id = 9) const uint STAGES = 2u;  // shared buffers: 1 or 2
const uint BM = WARPS_M * WMF * 16u;
const uint BN = WARPS_N * WNF * 16u;
// Tile rows in shared memory, in uvec2 (4 halves): BK halves plus 8 of padding, which keeps every
// fragment row 16-byte aligned (as the cooperative loads require) and spreads the 16 rows of a
// fragment load over the banks.
const uint SROW = BK / 4u + 2u;
const uint W_UNITS = BN * (BK / uint(UNIT));  // decode units per weight slice
const uint W_ITEMS = (W_UNITS + gl_WorkGroupSize.x - 1u) / gl_WorkGroupSize.x;
const uint X4_UNITS = BM * (BK / 4u);  // vec4 loads per f32 activation slice
const uint X4_ITEMS = (X4_UNITS + gl_WorkGroupSize.x - 1u) / gl_WorkGroupSize.x;
const uint X8_UNITS = BM * (BK / 8u);  // uvec4 loads per f16 activation slice
const uint X8_ITEMS = (X8_UNITS + gl_WorkGroupSize.x - 1u) / gl_WorkGroupSize.x;

layout(std430, binding = 1) readonly buffer X { vec4 xv[]; };
layout(std430, binding = 1) readonly buffer XH { uvec4 xh[]; };
layout(std430, binding = 2) buffer Y { float y[]; };
layout(std430, binding = 3) writeonly buffer Part { float part[]; };

layout(push_constant) uniform Params {
  uint n_rows;    // N
  uint k;         // K: a multiple of QK
  uint n_cols;    // M: tokens
  uint x_stride;  // elements between token rows of x (a multiple of 4)
  uint y_stride;  // elements between token rows of y
  uint w_off;     // byte offset of W in binding 0 (a multiple of 16)
  uint x_off;     // element offset of x in binding 1 (a multiple of 4)
  uint y_off;     // element offset of y in binding 2
  // bit 0: add into y instead of overwriting it (fused residual add); bit 1: y_off and y_stride
  // are multiples of 4, so whole fragments may be stored to (and loaded from) y directly;
  // bit 2: split-K, partial tiles to binding 3 (see above)
  uint flags;
  uint k_split;      // K elements per split (a multiple of BK)
  uint part_ld;      // elements between token rows of a partial tile (a multiple of BN)
  uint part_stride;  // elements between the partials of consecutive splits
#ifdef MOE
  uint expert_bytes;  // bytes between the experts of W (expert e at w_off + e * expert_bytes)
  uint n_used;        // pairs per token (x rows are tokens unless bit 3 of flags)
#endif
} p;

#include "moe_gemm_rows.glsl"

shared uvec2 x_sh[STAGES * BM * SROW];
shared uvec2 w_sh[STAGES * BN * SROW];
// One 16x16 f32 fragment per subgroup, for the output fragments that cross the matrix's edge.
shared float c_sh[WARPS_M * WARPS_N * 256u];

uvec2 pack_f16(vec4 v) {
  v = clamp(v, vec4(-65504.0), vec4(65504.0));
  return uvec2(packHalf2x16(v.xy), packHalf2x16(v.zw));
}

#include "coopmat_slice_loads.glsl"

void main() {
  dequant_init();

  const uint warp = gl_SubgroupID;
  const uint wm = warp % WARPS_M;
  const uint wn = warp / WARPS_M;
  const uint n0 = gl_WorkGroupID.x * BN;
  const uint m0 = gl_WorkGroupID.y * BM;
  // Grouped expert products: this tile's pairs (an expert with fewer pairs exits here, before
  // any barrier); the barrier below publishes them.
  if (!moe_tile_begin(m0, BM)) return;
  const bool split = (p.flags & 4u) != 0u;
  const uint k_begin = split ? gl_WorkGroupID.z * p.k_split : 0u;
  const uint k_end = split ? min(p.k, k_begin + p.k_split) : p.k;
  const uint slices = (k_end - k_begin + BK - 1u) / BK;

  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[WMF * WNF];
  [[unroll]] for (uint i = 0u; i < WMF * WNF; ++i)
    acc[i] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);

  barrier();  // the decoders' lookup tables
  if (PIPELINED) {
    fetch_slice(k_begin);
    store_slice(k_begin, 0u);
    if (slices > 1u) fetch_slice(k_begin + BK);
  } else {
    load_slice(k_begin, 0u);
  }
  barrier();
  for (uint s = 0u; s < slices; ++s) {
    const uint cur = STAGES == 2u ? s & 1u : 0u;
    if (STAGES == 2u) next_slice(k_begin, s, slices, cur ^ 1u);
    [[unroll]] for (uint kk = 0u; kk < BK / 16u; ++kk) {
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a[WMF];
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> b[WNF];
      [[unroll]] for (uint i = 0u; i < WMF; ++i)
        coopMatLoadNV(a[i], x_sh, cur * BM * SROW + (wm * WMF + i) * 16u * SROW + kk * 4u, SROW,
                      false);
      [[unroll]] for (uint j = 0u; j < WNF; ++j)
        coopMatLoadNV(b[j], w_sh, cur * BN * SROW + (wn * WNF + j) * 16u * SROW + kk * 4u, SROW,
                      true);
      [[unroll]] for (uint i = 0u; i < WMF; ++i)
        [[unroll]] for (uint j = 0u; j < WNF; ++j)
          acc[i * WNF + j] = coopMatMulAddNV(a[i], b[j], acc[i * WNF + j]);
    }
    barrier();
    if (STAGES == 1u && s + 1u < slices) {
      next_slice(k_begin, s, slices, 0u);
      barrier();
    }
  }

  if (split) {
    // The partial buffer is padded to whole tiles: every fragment goes straight to it.
    const uint base = gl_WorkGroupID.z * p.part_stride;
    [[unroll]] for (uint i = 0u; i < WMF; ++i) {
      [[unroll]] for (uint j = 0u; j < WNF; ++j) {
        const uint fm = m0 + (wm * WMF + i) * 16u;
        const uint fn = n0 + (wn * WNF + j) * 16u;
        coopMatStoreNV(acc[i * WNF + j], part, base + fm * p.part_ld + fn, p.part_ld, false);
      }
    }
    return;
  }

  const bool add = (p.flags & 1u) != 0u;
  const bool direct = (p.flags & 2u) != 0u;
  const uint lane = gl_SubgroupInvocationID;
  const uint stage = warp * 256u;
  [[unroll]] for (uint i = 0u; i < WMF; ++i) {
    [[unroll]] for (uint j = 0u; j < WNF; ++j) {
      const uint fm = m0 + (wm * WMF + i) * 16u;
      const uint fn = n0 + (wn * WNF + j) * 16u;
      if (fm >= N_COLS || fn >= p.n_rows) continue;
      if (direct && fm + 16u <= N_COLS && fn + 16u <= p.n_rows) {
        const uint at = p.y_off + fm * p.y_stride + fn;
        fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> c = acc[i * WNF + j];
        if (add) {
          fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> old;
          coopMatLoadNV(old, y, at, p.y_stride, false);
          c = c + old;
        }
        coopMatStoreNV(c, y, at, p.y_stride, false);
      } else {
        // Edge fragment: through shared memory, then only its in-range elements.
        coopMatStoreNV(acc[i * WNF + j], c_sh, stage, 16u, false);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        for (uint e = lane; e < 256u; e += gl_SubgroupSize) {
          const uint m = fm + e / 16u;
          const uint n = fn + e % 16u;
          if (m < N_COLS && n < p.n_rows) {
            const uint at = p.y_off + Y_ROW(m) * p.y_stride + n;
            y[at] = (add ? y[at] : 0.0) + c_sh[stage + e];
          }
        }
        subgroupBarrier();
      }
    }
  }
}
