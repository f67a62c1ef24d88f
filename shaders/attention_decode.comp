#version 450
// Decode attention (one query token per sequence) over the paged KV cache (f16, or q8_0 / q4_0
// expanded to f16 as loaded: kv_quant.glsl): attention.comp's
// inputs, outputs and split-K partials, laid out for latency instead of reuse.
//
// attention.comp walks a workgroup's KV range in tiles of 32 positions, each tile a round trip to
// memory and four barriers: at decode a workgroup (one sequence, one KV head) is alone on its
// compute unit, so a step's attention took as many round trips as its context has tiles (on an
// H100 about 11 us a layer at 100 positions, the longest phase of a 1B step). Here a chunk is as
// many positions as the workgroup has invocations: invocation i loads position i's K and V rows at
// once (one round trip per chunk), takes the R query heads' scores with its K row in registers and
// stages its V row in shared memory; the softmax runs per query head across the chunk, and the
// output's dimension pairs are spread over invocations (NS position subsets each, summed at the
// end).
//
// Grid: x = 1, y = query token, z = (kv_head * HEAD_GROUPS + group) * n_splits + split; splits
// walk whole chunks (attention_range.glsl with BC = the workgroup size). At decode a token is a
// sequence; a sequence with a few tokens (a speculative step's drafts) takes one workgroup per
// token, each seeing the keys up to its own position, the shared keys read again from L2. Output as attention.comp: with
// one split the normalised rows (and with F16_OUT / Q8_OUT their f16 / q8 copy, dense rows only),
// otherwise unnormalised partials and (m, l) pairs for attention_reduce.comp.

#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable

#define META_BINDING 3
#include "kv_meta.glsl"

layout(local_size_x_id = 0) in;                  // invocations: P * TPP
layout(constant_id = 1) const uint D = 128u;     // head dim (a multiple of 4, at most 256)
layout(constant_id = 2) const uint R = 1u;       // query heads per workgroup (GQA ratio / groups)
layout(constant_id = 3) const uint BLOCK = 16u;  // KV cache block size (tokens)
layout(constant_id = 4) const uint TPP = 1u;     // invocations per position (a power of two)
// Workgroups per KV head (HEAD_GROUPS * R = the GQA ratio), each with R of its query heads: at
// short contexts a step's few (sequence, KV head) workgroups leave most compute units idle, and a
// chunk's scores, softmax and products for all of a KV head's query heads are one workgroup's
// serial work; split over HEAD_GROUPS workgroups they run side by side (each loads the KV rows,
// from L2 after the first).
layout(constant_id = 5) const uint HEAD_GROUPS = 1u;
layout(constant_id = 6) const uint KV_TYPE = 0u;  // cache element type (kv_quant.glsl)

const uint WG = gl_WorkGroupSize.x;
const uint P = WG / TPP;  // positions per chunk
const uint BC = P;        // attention_range.glsl's tile: one chunk
const uint HD2 = D / 2u;
const uint HD8 = D / 8u;
const uint VS = HD2 + 1u;  // padded shared row stride (words): conflict-free row stores
// Output dimension pairs x position subsets: NS invocations share a pair, each summing every
// NS-th position of a chunk.
const uint NS = WG >= HD2 ? WG / HD2 : 1u;
const uint ITEMS = (HD2 * NS + WG - 1u) / WG;
const uint OUT_ITEMS = (R * HD2 + WG - 1u) / WG;

layout(std430, binding = 0) readonly buffer Q { float q[]; };
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
  uint q_off, q_stride;
  uint out_off, out_stride;
  float scale;
  float softcap;
  uint window;
  uint n_splits;
  uint non_causal;
  uint chunk;  // 0: off; else (causal) keys from qp - qp % chunk on
} p;

#include "attention_range.glsl"

shared vec4 Qs[R * D / 4u];
// The chunk's V rows (f16 pairs); after the last chunk, the position subsets' output sums.
shared uint Vs[P * VS];
shared float Ss[R * P];
shared float Ms[R], Ls[R], Alpha[R];

#define NEG_INF uintBitsToFloat(0xFF800000u)

float score(float dot) {
  return p.softcap > 0.0 ? p.softcap * tanh(clamp(dot / p.softcap, -15.0, 15.0)) : dot;
}

void main() {
  const uint tid = gl_LocalInvocationIndex;
  const uint t0 = gl_WorkGroupID.y;  // the query token
  const uint seq = meta_token_seq(p.n_tokens, t0);
  const uint unit = gl_WorkGroupID.z / p.n_splits;  // (KV head, query-head group)
  const uint kvh = unit / HEAD_GROUPS;
  const uint q0 = unit * R;  // the workgroup's first query head
  const uint split = gl_WorkGroupID.z % p.n_splits;
  const uint kv_len = meta_seq_kv_len(p.n_tokens, p.n_seqs, seq);
  const uint table = meta_seq_table(p.n_tokens, p.n_seqs, seq);
  const uint qp = meta_token_pos(p.n_tokens, t0);

  uint kv_hi, chunk_begin, chunk_end;
  kv_tile_range(1u, t0, kv_len, split, kv_hi, chunk_begin, chunk_end);

  for (uint i = tid; i < R * (D / 4u); i += WG) {
    const uint r = i / (D / 4u), d = 4u * (i % (D / 4u));
    const uint qi = p.q_off + t0 * p.q_stride + (q0 + r) * D + d;
    Qs[i] = vec4(q[qi], q[qi + 1u], q[qi + 2u], q[qi + 3u]) * p.scale;
  }
  for (uint r = tid; r < R; r += WG) {
    Ms[r] = NEG_INF;
    Ls[r] = 0.0;
  }
  vec2 acc[ITEMS * R];
  [[unroll]] for (uint k = 0u; k < ITEMS * R; ++k) acc[k] = vec2(0.0);

  // Invocations per softmax row: a power of two, at most WG / R and the subgroup size.
  uint tpr = 1u;
  while (tpr * 2u <= min(min(P, WG / R), gl_SubgroupSize)) tpr *= 2u;
  for (uint chunk = chunk_begin; chunk < chunk_end; ++chunk) {
    // Invocation tid loads part `part` of position `pos`'s K and V rows (HD8 / TPP uvec4 each).
    const uint pos = tid / TPP, part = tid % TPP;
    const uint kp = chunk * P + pos;
    barrier();  // the previous chunk's V rows and probabilities consumed (and Qs visible)
    float s[R];
    [[unroll]] for (uint r = 0u; r < R; ++r) s[r] = NEG_INF;
    vec4 dots[R];
    [[unroll]] for (uint r = 0u; r < R; ++r) dots[r] = vec4(0.0);
    const bool in_range = kp < kv_hi;
    if (in_range) {
      const uint blk = meta_block(table, kp, BLOCK);
      const uint row = (blk * p.n_kv_heads + kvh) * BLOCK + kp % BLOCK;
      if (D % (8u * TPP) == 0u) {
        [[unroll]] for (uint jj = 0u; jj < HD8 / TPP; ++jj) {
          const uint j = part * (HD8 / TPP) + jj;
          const uvec4 k = k_load8(row, j);
          const uvec4 v = v_load8(row, j);
          const vec4 k0 = vec4(unpackHalf2x16(k.x), unpackHalf2x16(k.y));
          const vec4 k1 = vec4(unpackHalf2x16(k.z), unpackHalf2x16(k.w));
          [[unroll]] for (uint r = 0u; r < R; ++r)
            dots[r] += Qs[r * (D / 4u) + 2u * j] * k0 + Qs[r * (D / 4u) + 2u * j + 1u] * k1;
          Vs[pos * VS + 4u * j] = v.x;
          Vs[pos * VS + 4u * j + 1u] = v.y;
          Vs[pos * VS + 4u * j + 2u] = v.z;
          Vs[pos * VS + 4u * j + 3u] = v.w;
        }
      } else if (part == 0u) {
        [[unroll]] for (uint j = 0u; j < HD2 / 2u; ++j) {
          const vec4 k = vec4(unpackHalf2x16(k_pair(row, 2u * j)),
                              unpackHalf2x16(k_pair(row, 2u * j + 1u)));
          [[unroll]] for (uint r = 0u; r < R; ++r) dots[r] += Qs[r * (D / 4u) + j] * k;
          Vs[pos * VS + 2u * j] = v_pair(row, 2u * j);
          Vs[pos * VS + 2u * j + 1u] = v_pair(row, 2u * j + 1u);
        }
      }
    } else {
      // Past the range: zeros, so a zero probability never meets stale (possibly non-finite) V.
      for (uint j = part; j < HD2; j += TPP) Vs[pos * VS + j] = 0u;
    }
    // The parts' partial dots meet in the position's first invocation (uniform control flow:
    // every invocation shuffles).
    float dot[R];
    [[unroll]] for (uint r = 0u; r < R; ++r) {
      dot[r] = (dots[r].x + dots[r].y) + (dots[r].z + dots[r].w);
      for (uint o = 1u; o < TPP; o <<= 1) dot[r] += subgroupShuffleXor(dot[r], o);
    }
    if (in_range && key_visible(kp, qp, kv_hi)) {
      [[unroll]] for (uint r = 0u; r < R; ++r) s[r] = score(dot[r]);
    }
    if (part == 0u) {
      [[unroll]] for (uint r = 0u; r < R; ++r) Ss[r * P + pos] = s[r];
    }
    barrier();
    // Online softmax per query head: TPR consecutive invocations a row, combined with shuffles.
    if (tid < R * tpr) {
      const uint r = tid / tpr, lane = tid % tpr;
      const float m_old = Ms[r];
      float mx = NEG_INF;
      for (uint c = lane; c < P; c += tpr) mx = max(mx, Ss[r * P + c]);
      for (uint o = 1u; o < tpr; o <<= 1) mx = max(mx, subgroupShuffleXor(mx, o));
      mx = max(mx, m_old);
      float sum = 0.0;
      for (uint c = lane; c < P; c += tpr) {
        const float e = mx == NEG_INF ? 0.0 : exp(Ss[r * P + c] - mx);
        Ss[r * P + c] = e;
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
    [[unroll]] for (uint k = 0u; k < ITEMS; ++k) {
      const uint i = tid + k * WG;
      if (i < HD2 * NS) {
        const uint j = i % HD2, ps = i / HD2;
        vec2 o[R];
        [[unroll]] for (uint r = 0u; r < R; ++r) o[r] = acc[k * R + r] * Alpha[r];
        for (uint c = ps; c < P; c += NS) {
          const vec2 v = unpackHalf2x16(Vs[c * VS + j]);
          [[unroll]] for (uint r = 0u; r < R; ++r) o[r] += Ss[r * P + c] * v;
        }
        [[unroll]] for (uint r = 0u; r < R; ++r) acc[k * R + r] = o[r];
      }
    }
  }
  barrier();
  // The position subsets' sums per (query head, dimension pair) meet in Vs, as float pairs.
  [[unroll]] for (uint k = 0u; k < ITEMS; ++k) {
    const uint i = tid + k * WG;
    if (i < HD2 * NS) {
      const uint j = i % HD2, ps = i / HD2;
      [[unroll]] for (uint r = 0u; r < R; ++r) {
        const uint at = 2u * ((ps * R + r) * HD2 + j);
        Vs[at] = floatBitsToUint(acc[k * R + r].x);
        Vs[at + 1u] = floatBitsToUint(acc[k * R + r].y);
      }
    }
  }
  barrier();
  vec2 total[OUT_ITEMS];
  [[unroll]] for (uint k = 0u; k < OUT_ITEMS; ++k) {
    total[k] = vec2(0.0);
    const uint i = tid + k * WG;
    if (i < R * HD2) {
      const uint r = i / HD2, j = i % HD2;
      for (uint ps = 0u; ps < NS; ++ps) {
        const uint at = 2u * ((ps * R + r) * HD2 + j);
        total[k] += vec2(uintBitsToFloat(Vs[at]), uintBitsToFloat(Vs[at + 1u]));
      }
    }
  }

  if (p.n_splits == 1u) {
    [[unroll]] for (uint k = 0u; k < OUT_ITEMS; ++k) {
      const uint i = tid + k * WG;
      if (i < R * HD2) {
        const uint r = i / HD2, j = i % HD2;
        const uint qh = q0 + r;
        const vec2 v = normalise_row(total[k], Ms[r], Ls[r], qh);
        const uint o = p.out_off + t0 * p.out_stride + qh * D + 2u * j;
        outv[o] = v.x;
        outv[o + 1u] = v.y;
#ifdef F16_OUT
        out16[o >> 1] = packHalf2x16(clamp(v, vec2(-65504.0), vec2(65504.0)));
#endif
#ifdef Q8_OUT
        // Row r's output gathers in Qs (no longer read) for the q8 blocks below, one float at a
        // time: a swizzled store may load and store the whole vec4, racing with its other half.
        const uint e = r * D + 2u * j;
        Qs[e >> 2][e & 3u] = v.x;
        Qs[e >> 2][(e & 3u) + 1u] = v.y;
#endif
      }
    }
#ifdef Q8_OUT
    barrier();
    const uint blocks = D / 32u;
    for (uint b = tid; b < R * blocks; b += WG) {
      const uint r = b / blocks, m = b % blocks;
      const uint qh = q0 + r;
      vec4 v[8];
      [[unroll]] for (uint i = 0u; i < 8u; ++i) v[i] = Qs[(r * D + 32u * m) / 4u + i];
      q8_store_block((t0 * p.n_q_heads + qh) * blocks + m, p.n_tokens * p.n_q_heads * blocks, v);
    }
#endif
  } else {
    const uint rows_total = p.n_tokens * p.n_q_heads;
    [[unroll]] for (uint k = 0u; k < OUT_ITEMS; ++k) {
      const uint i = tid + k * WG;
      if (i < R * HD2) {
        const uint r = i / HD2, j = i % HD2;
        const uint o = ((split * p.n_tokens + t0) * p.n_q_heads + q0 + r) * D + 2u * j;
        outv[o] = total[k].x;
        outv[o + 1u] = total[k].y;
      }
    }
    for (uint r = tid; r < R; r += WG) {
      const uint o =
          p.n_splits * rows_total * D + ((split * p.n_tokens + t0) * p.n_q_heads + q0 + r) * 2u;
      outv[o] = Ms[r];
      outv[o + 1u] = Ls[r];
    }
  }
}
