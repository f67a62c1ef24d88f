#version 450
// Prefill attention on tensor cores (GL_NV_cooperative_matrix, 16x16x16 f16 x f16 + f32): the
// same contract, masks, grid, push constants and split-K partials as attention.comp, for steps
// with many query tokens, where that kernel's scalar Q.K and P.V products dominate (at 32k of
// context they were 90% of an 8B prefill). With n_splits > 1 each split's max, sum and
// unnormalised O go to the partials that attention_reduce.comp combines.
//
// A workgroup of four subgroups owns ROWS = 64 rows: BQ = 64 / R query tokens of one sequence
// times the R query heads that share one KV head (row r: token r / R, head r % R), so each K/V
// tile is staged once for all of them; subgroup w owns rows 16w .. 16w + 15 (its Q fragments
// stay in registers, its O accumulators too).
//
// The softmax runs in one pass over the KV tiles with a lazily moved reference: each row keeps a
// reference maximum m and takes P = exp(S - m), which only needs m to be near the true maximum,
// not equal to it. m moves only when a tile's score passes it by more than REBASE; then l and the
// row's O accumulators are scaled by exp(m_old - m_new). Cooperative matrices cannot scale their
// rows by a per-row factor, so that goes through shared memory, but after the first tiles it
// rarely happens: the online form's rescale after every tile (or a second pass that recomputes
// Q.K^T to find the exact maximum first, as this kernel did before: a third more tensor work and
// every K tile loaded twice) is avoided. P <= e^REBASE stays far inside f16's range.
// Q is rounded to f16 (the cache already is), P too; the sums stay f32.
//
// Q8_OUT: the result is also written as q8 blocks (binding 5, q8_block.glsl) for the int8-dot
// output projection, as attention.comp does; needs dense rows and D a multiple of 32.

#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#extension GL_KHR_shader_subgroup_vote : enable
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_NV_cooperative_matrix : enable
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : enable

#define META_BINDING 3
#include "kv_meta.glsl"

layout(local_size_x_id = 0) in;  // 4 * subgroup size
layout(constant_id = 1) const uint D = 128u;     // head dim: a multiple of 16, at most 256
layout(constant_id = 2) const uint R = 1u;       // query heads per KV head: a divisor of 64
layout(constant_id = 3) const uint BLOCK = 16u;  // KV cache block size (tokens)
layout(constant_id = 4) const uint KV_TYPE = 0u;  // cache element type (kv_quant.glsl)
// The heads' size in Q, the cache and the output (a multiple of 8, at most D): below D (the next
// multiple of 16: SigLIP's and Qwen3-VL's heads of 72 run as 80), the padding is zeros in the
// staged Q, K and V and never written out. Only f16 caches, unsplit.
layout(constant_id = 5) const uint DH = 128u;
#define KV_HEAD_DIM DH

const uint ROWS = 64u;
const uint BC = 32u;  // KV positions per tile
const uint BQ = ROWS / R;
const uint DF = D / 16u;    // 16-wide fragments along the head dim
const uint CF = BC / 16u;   // 16-wide fragments along a tile's positions
const uint HROW = D / 4u + 2u;   // f16 rows of Q, K and V in uvec2 (4 halves), 16-byte padded
const uint PROW = BC / 4u + 2u;  // f16 rows of P, the same way
const uint SROW = BC + 4u;       // f32 rows of S (and of the output staging), in floats
const uint HD8 = D / 8u;         // uvec4 per cache row
const uint WG = gl_WorkGroupSize.x;
const float REBASE = 8.0;  // how far a score may pass a row's reference maximum (e^8 ~ 3000)
#ifdef Q8_OUT
const uint OUT_COLS = 32u;  // output columns staged at a time: one q8 block per row
#else
const uint OUT_COLS = 16u;
#endif

layout(std430, binding = 0) readonly buffer Q { vec4 q4[]; };
layout(std430, binding = 1) readonly buffer KCache { uvec4 kcache[]; };
layout(std430, binding = 2) readonly buffer VCache { uvec4 vcache[]; };
layout(std430, binding = 1) readonly buffer KCache2 { uvec2 kcache2[]; };
layout(std430, binding = 2) readonly buffer VCache2 { uvec2 vcache2[]; };
layout(std430, binding = 1) readonly buffer KCacheWords { uint kcache_w[]; };
layout(std430, binding = 2) readonly buffer VCacheWords { uint vcache_w[]; };
#include "kv_quant.glsl"
#include "attention_sinks.glsl"
KV_LOADERS(k, kcache, kcache2, kcache_w)
KV_LOADERS(v, vcache, vcache2, vcache_w)
layout(std430, binding = 4) writeonly buffer Out { float outv[]; };
#ifdef Q8_OUT
#define Q8_BINDING 5
#include "q8_block.glsl"
#endif

layout(push_constant) uniform Params {
  uint n_tokens;
  uint n_seqs;
  uint n_q_heads;
  uint n_kv_heads;
  uint q_off, q_stride;  // elements; head h of token t at q_off + t*q_stride + h*DH (multiples of 4)
  uint out_off, out_stride;
  float scale;
  float softcap;
  uint window;
  uint n_splits;
  uint non_causal;
  uint chunk;  // 0: off; else (causal) keys from qp - qp % chunk on
} p;

#include "attention_range.glsl"

// Q is staged here before each subgroup takes its fragments into registers; afterwards the
// region holds a tile's K rows then its V rows (ROWS >= 2 * BC, so Q's staging fits).
shared uvec2 HS[ROWS * HROW];
shared float Ssh[ROWS * SROW];  // each subgroup's S rows; at the end, its output staging
shared uvec2 Psh[ROWS * PROW];
shared float Msh[ROWS], Lsh[ROWS];
shared uint Pos[BQ];

#define NEG_INF uintBitsToFloat(0xFF800000u)

uvec2 pack_f16(vec4 v) {
  v = clamp(v, vec4(-65504.0), vec4(65504.0));
  return uvec2(packHalf2x16(v.xy), packHalf2x16(v.zw));
}

// K (v false) or V rows of positions kv0 .. kv0 + BC into HS (V after K); zeros past kv_hi.
void load_tile(bool v, uint kv0, uint kv_hi, uint table, uint kvh) {
  for (uint i = gl_LocalInvocationIndex; i < BC * HD8; i += WG) {
    const uint c = i / HD8, j = i % HD8;
    const uint kp = kv0 + c;
    uvec4 w = uvec4(0u);
    if (kp < kv_hi && j < DH / 8u) {
      const uint blk = meta_block(table, kp, BLOCK);
      const uint row = (blk * p.n_kv_heads + kvh) * BLOCK + kp % BLOCK;
      w = v ? v_load8(row, j) : k_load8(row, j);
    }
    const uint o = (v ? BC * HROW : 0u) + c * HROW + 2u * j;
    HS[o] = w.xy;
    HS[o + 1u] = w.zw;
  }
}

// This subgroup's S = Q.K^T for the staged K tile, into its rows of Ssh.
void scores(const fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> qf[DF], uint warp) {
  [[unroll]] for (uint j = 0u; j < CF; ++j) {
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> s = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
    [[unroll]] for (uint kk = 0u; kk < DF; ++kk) {
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> kf;
      coopMatLoadNV(kf, HS, j * 16u * HROW + kk * 4u, HROW, true);
      s = coopMatMulAddNV(qf[kk], kf, s);
    }
    coopMatStoreNV(s, Ssh, warp * 16u * SROW + j * 16u, SROW, false);
  }
  subgroupMemoryBarrierShared();
  subgroupBarrier();
}

// Score of row `row`, position kv0 + c, masked (NEG_INF) and soft-capped.
float masked_score(uint row, uint c, uint kv0, uint kv_hi, uint qp, bool row_valid) {
  if (!row_valid || !key_visible(kv0 + c, qp, kv_hi)) return NEG_INF;
  const float s = Ssh[row * SROW + c];
  return p.softcap > 0.0 ? p.softcap * tanh(clamp(s / p.softcap, -15.0, 15.0)) : s;
}

void main() {
  const uint tid = gl_LocalInvocationIndex;
  const uint warp = gl_SubgroupID;
  const uint lane = gl_SubgroupInvocationID;
  const uint seq = gl_WorkGroupID.y;
  const uint kvh = gl_WorkGroupID.z / p.n_splits;
  const uint split = gl_WorkGroupID.z % p.n_splits;
  const uint q_len = meta_seq_q_len(p.n_tokens, p.n_seqs, seq);
  const uint tile_q = gl_WorkGroupID.x * BQ;
  if (tile_q >= q_len) return;  // uniform
  const uint nq = min(BQ, q_len - tile_q);
  const uint t0 = meta_seq_q_start(p.n_tokens, p.n_seqs, seq) + tile_q;
  const uint kv_len = meta_seq_kv_len(p.n_tokens, p.n_seqs, seq);
  const uint table = meta_seq_table(p.n_tokens, p.n_seqs, seq);

  uint kv_hi, first_tile, end_tile;
  kv_tile_range(nq, t0, kv_len, split, kv_hi, first_tile, end_tile);

  // Q rows, scaled, as f16 (rows of tokens past nq are zeros).
  for (uint i = tid; i < ROWS * (D / 4u); i += WG) {
    const uint r = i / (D / 4u), d4 = i % (D / 4u);
    const uint tl = r / R, qh = kvh * R + r % R;
    vec4 v = vec4(0.0);
    if (tl < nq && d4 < DH / 4u)
      v = q4[(p.q_off + (t0 + tl) * p.q_stride + qh * DH) / 4u + d4] * p.scale;
    HS[r * HROW + d4] = pack_f16(v);
  }
  for (uint i = tid; i < BQ; i += WG) Pos[i] = i < nq ? meta_token_pos(p.n_tokens, t0 + i) : 0u;
  barrier();
  fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> qf[DF];
  [[unroll]] for (uint kk = 0u; kk < DF; ++kk)
    coopMatLoadNV(qf[kk], HS, warp * 16u * HROW + kk * 4u, HROW, false);

  // Each row of this subgroup's 16 belongs to two lanes, each over half of a tile's positions.
  const uint my_row = warp * 16u + lane / 2u;
  const uint half_c = lane % 2u;
  const uint my_tl = my_row / R;
  const bool row_valid = my_tl < nq;
  const uint qp = Pos[min(my_tl, BQ - 1u)];

  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> o[DF];
  [[unroll]] for (uint dj = 0u; dj < DF; ++dj)
    o[dj] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
  float m = NEG_INF;  // the row's reference maximum (the same in both of its lanes)
  float l = 0.0;      // this lane's half of the row's sum of P
  const uint stage = warp * 16u * SROW;
  for (uint tile = first_tile; tile < end_tile; ++tile) {
    const uint kv0 = tile * BC;
    barrier();  // Q's staging, or the previous tile's K and V, fully read
    load_tile(false, kv0, kv_hi, table, kvh);
    load_tile(true, kv0, kv_hi, table, kvh);
    barrier();
    scores(qf, warp);
    float sc[BC / 2u];
    float tile_max = NEG_INF;
    [[unroll]] for (uint k = 0u; k < BC / 2u; ++k) {
      sc[k] = masked_score(my_row, half_c * (BC / 2u) + k, kv0, kv_hi, qp, row_valid);
      tile_max = max(tile_max, sc[k]);
    }
    tile_max = max(tile_max, subgroupShuffleXor(tile_max, 1u));
    const bool rebase = tile_max > m + REBASE;  // also the first tile with a visible key
    // O and l are still zero until the row's first rebase: nothing to scale then.
    const bool rescale = rebase && m != NEG_INF;
    const float alpha = rescale ? exp(m - tile_max) : 1.0;
    if (rebase) m = tile_max;
    l *= alpha;
    [[unroll]] for (uint c4 = 0u; c4 < BC / 8u; ++c4) {
      vec4 e;
      [[unroll]] for (uint k = 0u; k < 4u; ++k) {
        const float s = sc[4u * c4 + k];
        e[k] = s == NEG_INF ? 0.0 : exp(s - m);
      }
      l += (e.x + e.y) + (e.z + e.w);
      Psh[my_row * PROW + (half_c * (BC / 2u) + 4u * c4) / 4u] = pack_f16(e);
    }
    if (subgroupAny(rescale)) {
      // Scale this subgroup's O rows by their alpha, two fragments at a time through its rows
      // of Ssh (the scores are in P by now).
      if (half_c == 0u) Msh[my_row] = alpha;
      [[unroll]] for (uint dj = 0u; dj < DF; dj += 2u) {
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        coopMatStoreNV(o[dj], Ssh, stage, SROW, false);
        if (dj + 1u < DF) coopMatStoreNV(o[dj + 1u], Ssh, stage + 16u, SROW, false);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        for (uint e = lane; e < 16u * 32u; e += gl_SubgroupSize) {
          const uint i = e / 32u;
          Ssh[stage + i * SROW + e % 32u] *= Msh[warp * 16u + i];
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        coopMatLoadNV(o[dj], Ssh, stage, SROW, false);
        if (dj + 1u < DF) coopMatLoadNV(o[dj + 1u], Ssh, stage + 16u, SROW, false);
      }
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    [[unroll]] for (uint kc = 0u; kc < CF; ++kc) {
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> pf;
      coopMatLoadNV(pf, Psh, warp * 16u * PROW + kc * 4u, PROW, false);
      [[unroll]] for (uint dj = 0u; dj < DF; ++dj) {
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> vf;
        coopMatLoadNV(vf, HS, BC * HROW + kc * 16u * HROW + dj * 4u, HROW, false);
        o[dj] = coopMatMulAddNV(pf, vf, o[dj]);
      }
    }
  }
  l += subgroupShuffleXor(l, 1u);
  if (half_c == 0u) {
    Msh[my_row] = m;
    Lsh[my_row] = l;
  }
  subgroupMemoryBarrierShared();
  subgroupBarrier();

  // Out: this subgroup's rows, 16 (32 with Q8_OUT) columns at a time through its Ssh rows.
  const uint cols = OUT_COLS;
  [[unroll]] for (uint dj = 0u; dj < DF; dj += cols / 16u) {
    [[unroll]] for (uint h = 0u; h < cols / 16u; ++h)
      coopMatStoreNV(o[dj + h], Ssh, stage + h * 16u, SROW, false);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    for (uint e = lane; e < 16u * cols; e += gl_SubgroupSize) {
      const uint i = e / cols, c = e % cols;
      const uint r = warp * 16u + i;
      const uint tl = r / R, qh = kvh * R + r % R;
      if (p.n_splits > 1u) {  // the partial: unnormalised
        if (tl < nq)
          outv[((split * p.n_tokens + t0 + tl) * p.n_q_heads + qh) * D + dj * 16u + c] =
              Ssh[stage + i * SROW + c];
        continue;
      }
      const float v = normalise_row(Ssh[stage + i * SROW + c], Msh[r], Lsh[r], qh);
      Ssh[stage + i * SROW + c] = v;
      if (tl < nq && dj * 16u + c < DH)
        outv[p.out_off + (t0 + tl) * p.out_stride + qh * DH + dj * 16u + c] = v;
    }
#ifdef Q8_OUT
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    if (lane < 16u && p.n_splits == 1u) {
      const uint r = warp * 16u + lane;
      const uint tl = r / R, qh = kvh * R + r % R;
      if (tl < nq) {
        vec4 v[8];
        [[unroll]] for (uint i = 0u; i < 8u; ++i)
          v[i] = vec4(Ssh[stage + lane * SROW + 4u * i], Ssh[stage + lane * SROW + 4u * i + 1u],
                      Ssh[stage + lane * SROW + 4u * i + 2u],
                      Ssh[stage + lane * SROW + 4u * i + 3u]);
        const uint blocks = D / 32u;
        q8_store_block(((t0 + tl) * p.n_q_heads + qh) * blocks + dj / 2u,
                       p.n_tokens * p.n_q_heads * blocks, v);
      }
    }
#endif
    subgroupMemoryBarrierShared();
    subgroupBarrier();
  }
  if (p.n_splits > 1u && lane < 16u) {
    const uint r = warp * 16u + lane;
    const uint tl = r / R, qh = kvh * R + r % R;
    if (tl < nq) {
      const uint o = p.n_splits * p.n_tokens * p.n_q_heads * D +
                     ((split * p.n_tokens + t0 + tl) * p.n_q_heads + qh) * 2u;
      outv[o] = Msh[r];
      outv[o + 1u] = Lsh[r];
    }
  }
}
