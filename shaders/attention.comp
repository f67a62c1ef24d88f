#version 450
// Attention over the paged f16 KV cache (flash-attention style: K/V tiles staged in shared
// memory, online softmax, one pass), for prefill (several query tokens per sequence) and decode
// (one), in one kernel.
//
// A workgroup owns one sequence, one KV head, BQ consecutive query tokens of that sequence and,
// with split-K, one slice of its KV range. Its ROWS = BQ * R rows are (token, query head) pairs:
// the R query heads sharing the KV head (GQA packing) for each token, so every K/V tile is loaded
// once for all of them. Masks come from indices: a key at position kp is visible to a query at
// position qp iff kp <= qp, kp < kv_len and (no window or qp - kp < window); non-causal passes
// (encoders: every token sees its whole input) drop the kp <= qp condition, and their window is
// symmetric (|qp - kp| < window).
// Grid: x = query tile (BQ tokens) within the sequence, y = sequence, z = kv_head * n_splits +
// split. Tiles past a sequence's query count exit at once.
//
// Output: with n_splits == 1 the normalised result, out[out_off + t*out_stride + qh*D + d] (f32);
// otherwise unnormalised partials for attention_reduce.comp: O at
// ((split * n_tokens + t) * n_q_heads + qh) * D + d, then (m, l) pairs after all O.
// F16_OUT: with n_splits == 1 the result is also written as f16 rows (binding 5) for the
// tensor-core output projection, saving its conversion pass; needs dense rows as Q8_OUT does.
// K_INT8 (q8_0 caches, devices with int8 dot products): the scores are integer dot products of
// the cache's int8 K rows, staged as they lie with their block scales, and the workgroup's query
// rows quantized to q8 blocks once (as llama.cpp's CUDA kernels score a q8_0 K): expanding every
// K value to f16 and taking float products cost a 32k-token decode half again f16's time.
// Q8_OUT: with n_splits == 1 the result is also written as q8 blocks (binding 5, q8_block.glsl)
// for the int8-dot output projection, saving its quantize pass (split steps get theirs from
// attention_reduce.comp); needs dense rows (out_off 0, out_stride n_q_heads * D) and D a
// multiple of 32.

#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable

#define META_BINDING 3
#include "kv_meta.glsl"
#ifdef K_INT8
#include "int8_dot.glsl"
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint D = 128u;   // head dim (a multiple of 4)
layout(constant_id = 2) const uint BC = 32u;   // KV positions per tile
layout(constant_id = 3) const uint BQ = 1u;    // query tokens per workgroup
layout(constant_id = 4) const uint R = 1u;     // query heads per KV head (GQA ratio)
layout(constant_id = 5) const uint BLOCK = 16u;  // KV cache block size (tokens)
layout(constant_id = 6) const uint KV_TYPE = 0u;  // cache element type (kv_quant.glsl)

const uint ROWS = BQ * R;
const uint HD2 = D / 2u;
const uint KS = HD2 + 1u;  // padded shared row stride (words) against bank conflicts
const uint WG = gl_WorkGroupSize.x;
const uint OUT_ITEMS = (ROWS * HD2 + WG - 1u) / WG;
const uint HD8 = D / 8u;  // uvec4 per cache row
const uint LOAD_ITEMS = (BC * HD8 + WG - 1u) / WG;
const uint LOAD_ITEMS_W = (BC * HD2 + WG - 1u) / WG;

layout(std430, binding = 0) readonly buffer Q { float q[]; };
// The cache is read 16 bytes at a time: one uvec4 = 8 halves of one (position, head) row.
// (head dims that are not a multiple of 8 use the word views).
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
#ifdef F16_OUT
layout(std430, binding = 5) writeonly buffer Out16 { uint out16[]; };
#endif

layout(push_constant) uniform Params {
  uint n_tokens;
  uint n_seqs;
  uint n_q_heads;
  uint n_kv_heads;
  uint q_off, q_stride;  // elements; head h of token t at q_off + t*q_stride + h*D
  uint out_off, out_stride;
  float scale;    // applied to Q.K
  float softcap;  // 0: off; else scores = softcap * tanh(scores / softcap)
  uint window;    // 0: off; else sliding window size
  uint n_splits;
  uint non_causal;  // 1: keys after the query are visible too
  uint chunk;  // 0: off; else (causal) keys from qp - qp % chunk on
} p;

#include "attention_range.glsl"

shared vec4 Qs[ROWS * D / 4u];
shared uint KVs[2u * BC * KS];  // the tile's K rows, then its V rows
#ifdef K_INT8
const uint KB = D / 32u;      // q8 blocks per row
const uint KS8 = D / 4u + 1u;  // padded shared stride of an int8 K row (words)
shared uint Q8s[ROWS * D / 4u];  // the query rows as int8, 4 a word
shared float Qd[ROWS * KB];      // their block scales
shared float Kd[BC * KB];        // the tile's K block scales (its int8 rows in KVs)
#endif
shared float Ss[ROWS * BC];
shared float Ms[ROWS], Ls[ROWS], Alpha[ROWS];
shared uint Pos[BQ];

#define NEG_INF uintBitsToFloat(0xFF800000u)

// Stages BC cache rows (positions kv0.., zeros past kv_hi) of K or V into KVs (V after K). The
// loop has a fixed trip count so it unrolls and every invocation issues all its block-table and
// cache loads before waiting on any of them.
void load_tile(bool v, uint kv0, uint kv_hi, uint table, uint kvh) {
#ifdef K_INT8
  if (!v) {
    // K as it lies: 8 int8 values (two words) an item, the block's scale with its first group.
    [[unroll]] for (uint k = 0u; k < LOAD_ITEMS; ++k) {
      const uint i = gl_LocalInvocationIndex + k * WG;
      if (i < BC * HD8) {
        const uint c = i / HD8, j = i % HD8;
        const uint kp = kv0 + c;
        uvec2 w = uvec2(0u);
        float d = 0.0;
        if (kp < kv_hi) {
          const uint blk = meta_block(table, kp, BLOCK);
          const uint row = (blk * p.n_kv_heads + kvh) * BLOCK + kp % BLOCK;
          const uint base = row * KV_ROW_WORDS;
          w = KV_ROW_WORDS % 2u == 0u ? kcache2[base / 2u + j]
                                      : uvec2(kcache_w[base + 2u * j], kcache_w[base + 2u * j + 1u]);
          if (j % 4u == 0u) d = k_scale(base, j / 4u);
        }
        KVs[c * KS8 + 2u * j] = w.x;
        KVs[c * KS8 + 2u * j + 1u] = w.y;
        if (j % 4u == 0u) Kd[c * KB + j / 4u] = d;
      }
    }
    return;
  }
#endif
  if (D % 8u == 0u) {
    [[unroll]] for (uint k = 0u; k < LOAD_ITEMS; ++k) {
      const uint i = gl_LocalInvocationIndex + k * WG;
      if (i < BC * HD8) {
        const uint c = i / HD8, j = i % HD8;
        const uint kp = kv0 + c;
        uvec4 w = uvec4(0u);
        if (kp < kv_hi) {
          const uint blk = meta_block(table, kp, BLOCK);
          const uint row = (blk * p.n_kv_heads + kvh) * BLOCK + kp % BLOCK;
          w = v ? v_load8(row, j) : k_load8(row, j);
        }
        const uint o = (v ? BC * KS : 0u) + c * KS + 4u * j;
        KVs[o] = w.x;
        KVs[o + 1u] = w.y;
        KVs[o + 2u] = w.z;
        KVs[o + 3u] = w.w;
      }
    }
  } else {
    [[unroll]] for (uint k = 0u; k < LOAD_ITEMS_W; ++k) {
      const uint i = gl_LocalInvocationIndex + k * WG;
      if (i < BC * HD2) {
        const uint c = i / HD2, j = i % HD2;
        const uint kp = kv0 + c;
        uint w = 0u;
        if (kp < kv_hi) {
          const uint blk = meta_block(table, kp, BLOCK);
          const uint row = (blk * p.n_kv_heads + kvh) * BLOCK + kp % BLOCK;
          w = v ? v_pair(row, j) : k_pair(row, j);
        }
        KVs[(v ? BC * KS : 0u) + c * KS + j] = w;
      }
    }
  }
}

void main() {
  const uint tid = gl_LocalInvocationIndex;
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

  uint kv_hi, tile_begin, tile_end;
  kv_tile_range(nq, t0, kv_len, split, kv_hi, tile_begin, tile_end);

  // Q rows (pre-scaled), positions, softmax state.
  for (uint i = tid; i < ROWS * (D / 4u); i += WG) {
    const uint r = i / (D / 4u), d = 4u * (i % (D / 4u));
    const uint tl = r / R, qh = kvh * R + r % R;
    const uint qi = p.q_off + (t0 + tl) * p.q_stride + qh * D + d;
    Qs[i] = tl < nq ? vec4(q[qi], q[qi + 1u], q[qi + 2u], q[qi + 3u]) * p.scale : vec4(0.0);
  }
  for (uint i = tid; i < BQ; i += WG) Pos[i] = i < nq ? meta_token_pos(p.n_tokens, t0 + i) : 0u;
#ifdef K_INT8
  // The query rows as q8 blocks (round to nearest, scale amax / 127), once for every tile.
  barrier();
  for (uint b = tid; b < ROWS * KB; b += WG) {
    vec4 v[8];
    float amax = 0.0;
    [[unroll]] for (uint i = 0u; i < 8u; ++i) {
      v[i] = Qs[b * 8u + i];
      amax = max(amax, max(max(abs(v[i].x), abs(v[i].y)), max(abs(v[i].z), abs(v[i].w))));
    }
    const float d = amax / 127.0;
    const float inv = d > 0.0 ? 1.0 / d : 0.0;
    [[unroll]] for (uint i = 0u; i < 8u; ++i) {
      const ivec4 qi = ivec4(round(v[i] * inv));
      Q8s[b * 8u + i] = uint(qi.x & 0xFF) | (uint(qi.y & 0xFF) << 8) | (uint(qi.z & 0xFF) << 16) |
                        (uint(qi.w & 0xFF) << 24);
    }
    Qd[b] = d;
  }
#endif
  for (uint r = tid; r < ROWS; r += WG) {
    Ms[r] = NEG_INF;
    Ls[r] = 0.0;
  }
  vec2 acc[OUT_ITEMS];
  [[unroll]] for (uint k = 0u; k < OUT_ITEMS; ++k) acc[k] = vec2(0.0);

  // Invocations per softmax row: a power of two, at most BC, WG / ROWS and the subgroup size.
  uint tpr = 1u;
  while (tpr * 2u <= min(min(BC, WG / ROWS), gl_SubgroupSize)) tpr *= 2u;
  for (uint tile = tile_begin; tile < tile_end; ++tile) {
    const uint kv0 = tile * BC;
    barrier();  // previous tile's K, V and P fully consumed (and initial state visible)
    // K and V together: one wait on the cache per tile instead of two.
    load_tile(false, kv0, kv_hi, table, kvh);
    load_tile(true, kv0, kv_hi, table, kvh);
    barrier();
    for (uint i = tid; i < ROWS * BC; i += WG) {
      const uint r = i / BC, c = i % BC;
      const uint tl = r / R;
      const uint kp = kv0 + c;
      float s = NEG_INF;
      if (tl < nq) {
        const uint qp = Pos[tl];
        if (key_visible(kp, qp, kv_hi)) {
#ifdef K_INT8
          float dot = 0.0;
          [[unroll]] for (uint b = 0u; b < KB; ++b) {
            int si = 0;
            [[unroll]] for (uint w = 0u; w < 8u; ++w)
              si = dot4(Q8s[r * (D / 4u) + b * 8u + w], KVs[c * KS8 + b * 8u + w], si);
            dot += float(si) * (Qd[r * KB + b] * Kd[c * KB + b]);
          }
#else
          // Four independent partial sums: the FMA chain, not the loads, bounds this loop.
          vec4 acc4 = vec4(0.0);
          const uint qb = r * (D / 4u), kb = c * KS;
          if (D <= 256u) {
            [[unroll]] for (uint j = 0u; j < D / 4u; ++j) {
              acc4 += Qs[qb + j] * vec4(unpackHalf2x16(KVs[kb + 2u * j]),
                                        unpackHalf2x16(KVs[kb + 2u * j + 1u]));
            }
          } else {
            // Heads above 256 (Gemma 4's 512) in unrolled steps of 32 dimensions: unrolled whole,
            // lavapipe's compiler took about 20 s a variant. (D is a specialization constant:
            // the branch not taken is compiled away.)
            [[dont_unroll]] for (uint j0 = 0u; j0 < D / 4u; j0 += 8u) {
              [[unroll]] for (uint j = j0; j < j0 + 8u; ++j) {
                acc4 += Qs[qb + j] * vec4(unpackHalf2x16(KVs[kb + 2u * j]),
                                          unpackHalf2x16(KVs[kb + 2u * j + 1u]));
              }
            }
          }
          const float dot = (acc4.x + acc4.y) + (acc4.z + acc4.w);
#endif
          s = p.softcap > 0.0 ? p.softcap * tanh(clamp(dot / p.softcap, -15.0, 15.0)) : dot;
        }
      }
      Ss[i] = s;
    }
    barrier();
    // Online softmax: TPR consecutive invocations per row (a power of two within one subgroup),
    // each over BC / TPR scores, combined with shuffles.
    if (tid < ROWS * tpr) {
      const uint r = tid / tpr, lane = tid % tpr;
      const float m_old = Ms[r];
      float mx = NEG_INF;
      for (uint c = lane; c < BC; c += tpr) mx = max(mx, Ss[r * BC + c]);
      for (uint o = 1u; o < tpr; o <<= 1) mx = max(mx, subgroupShuffleXor(mx, o));
      mx = max(mx, m_old);
      float sum = 0.0;
      for (uint c = lane; c < BC; c += tpr) {
        // exp(-inf) = 0 for masked keys; a row with nothing visible yet keeps zeros.
        const float e = mx == NEG_INF ? 0.0 : exp(Ss[r * BC + c] - mx);
        Ss[r * BC + c] = e;
        sum += e;
      }
      for (uint o = 1u; o < tpr; o <<= 1) sum += subgroupShuffleXor(sum, o);
      if (lane == 0u) {
        const float alpha = mx == NEG_INF ? 1.0 : (m_old == NEG_INF ? 0.0 : exp(m_old - mx));
        Ms[r] = mx;
        Ls[r] = Ls[r] * alpha + sum;
        Alpha[r] = alpha;
      }
    }
    barrier();
    [[unroll]] for (uint k = 0u; k < OUT_ITEMS; ++k) {
      const uint i = tid + k * WG;
      if (i < ROWS * HD2) {
        const uint r = i / HD2, j = i % HD2;
        vec2 o = acc[k] * Alpha[r];
        for (uint c = 0u; c < BC; ++c)
          o += Ss[r * BC + c] * unpackHalf2x16(KVs[(BC + c) * KS + j]);
        acc[k] = o;
      }
    }
  }
  barrier();

  if (p.n_splits == 1u) {
    [[unroll]] for (uint k = 0u; k < OUT_ITEMS; ++k) {
      const uint i = tid + k * WG;
      if (i < ROWS * HD2) {
        const uint r = i / HD2, j = i % HD2;
        const uint tl = r / R, qh = kvh * R + r % R;
        if (tl < nq) {
          const vec2 v = normalise_row(acc[k], Ms[r], Ls[r], qh);
          const uint o = p.out_off + (t0 + tl) * p.out_stride + qh * D + 2u * j;
          outv[o] = v.x;
          outv[o + 1u] = v.y;
#ifdef F16_OUT
          out16[o >> 1] = packHalf2x16(clamp(v, vec2(-65504.0), vec2(65504.0)));
#endif
#ifdef Q8_OUT
          // Row r's output gathers in Qs (no longer read) for the q8 blocks below, one float at
          // a time: a swizzled store (.xy) may load and store the whole vec4, racing with the
          // invocation that writes its other half.
          const uint e = r * D + 2u * j;
          Qs[e >> 2][e & 3u] = v.x;
          Qs[e >> 2][(e & 3u) + 1u] = v.y;
#endif
        }
      }
    }
#ifdef Q8_OUT
    barrier();
    const uint blocks = D / 32u;
    for (uint b = tid; b < ROWS * blocks; b += WG) {
      const uint r = b / blocks, m = b % blocks;
      const uint tl = r / R, qh = kvh * R + r % R;
      if (tl < nq) {
        vec4 v[8];
        [[unroll]] for (uint i = 0u; i < 8u; ++i) v[i] = Qs[(r * D + 32u * m) / 4u + i];
        q8_store_block(((t0 + tl) * p.n_q_heads + qh) * blocks + m,
                       p.n_tokens * p.n_q_heads * blocks, v);
      }
    }
#endif
  } else {
    const uint rows_total = p.n_tokens * p.n_q_heads;
    [[unroll]] for (uint k = 0u; k < OUT_ITEMS; ++k) {
      const uint i = tid + k * WG;
      if (i < ROWS * HD2) {
        const uint r = i / HD2, j = i % HD2;
        const uint tl = r / R, qh = kvh * R + r % R;
        if (tl < nq) {
          const uint o = ((split * p.n_tokens + t0 + tl) * p.n_q_heads + qh) * D + 2u * j;
          outv[o] = acc[k].x;
          outv[o + 1u] = acc[k].y;
        }
      }
    }
    for (uint r = tid; r < ROWS; r += WG) {
      const uint tl = r / R, qh = kvh * R + r % R;
      if (tl < nq) {
        const uint o = p.n_splits * rows_total * D +
                       ((split * p.n_tokens + t0 + tl) * p.n_q_heads + qh) * 2u;
        outv[o] = Ms[r];
        outv[o + 1u] = Ls[r];
      }
    }
  }
}
