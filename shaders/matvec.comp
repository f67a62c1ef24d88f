#version 450
// Decode matrix x vector(s): y[c][n] (+)= sum_k W[n][k] * x[c][k] for up to NUM_COLS activation
// vectors per dispatch, so continuous batching reads each weight once for several sequences.
// W is a ggml weight tensor [K contiguous, N rows] in its block format (TYPE_* define), decoded
// in registers; x and y are f32.
//
// One workgroup owns NUM_ROWS consecutive rows and NUM_COLS columns (grid: x+z over row groups,
// y over column groups). Its threads stride over the row's decode units (8 weights of a quant
// block, 4 of a float type); each thread keeps NUM_ROWS x NUM_COLS partial sums in registers.
// Partial sums are reduced within a subgroup (halving exchanges where a thread holds several,
// else subgroupAdd) and by one shared-memory step across subgroups, or, in the REDUCE_SHARED
// variants (no subgroup arithmetic or shuffles), with a shared-memory tree.
//
// INT_DOT variants ("MMVQ") read x quantized to int8 blocks of 32 (quantize_q8.comp) instead of
// f32 and take integer dot products of 4 packed bytes (dequant_int8.glsl): a thread handles a
// 32-weight group per step, so the K-quant unpacking costs a few integer ops per 4 weights.
//
// ROPE_KV_EPILOGUE (subgroup reduction; f32 or, with INT_DOT, q8 activations): decode's Q|K|V
// product with RoPE and the KV-cache write. A workgroup owns one pair of rows (2i, 2i+1) of a
// head (NUM_ROWS = 2; "normal" RoPE order, where the pair is what rotates together). The
// product's rows are rows row_base.. of Q|K|V (all of them, or Q, K or V alone): Q pairs are
// rotated into y, K pairs rotated and V pairs as they are go to the paged f16 caches at the
// token's slot (as rope.comp's rope, rope_kv and kv_copy would, with the same angle expression,
// rope_angle.glsl).

// MOE_IDS (float activations): the indirect products over the experts a router selected (ggml's
// MUL_MAT_ID at decode sizes). W is a stacked [K, N, n_expert] tensor, expert e's rows from byte
// w_off + e * expert_bytes; ids (binding 3) and weights (binding 4) are moe_route's. NUM_COLS is
// 1 and grid y walks the items:
//   moe_combine 0: item = pair q = t * n_used + k: y[q] = W[ids[q]] x[x_per_pair ? q : t];
//   moe_combine 1: item = token t: y[t] (+)= sum over its k of weights[q] * W[ids[q]] x[q],
//                  the k products summed per invocation before the one reduction.
// Only the selected experts' rows are read.
// With INT_DOT (not MOE_GROUPS), x is the q8 copy of those rows (a token's or a pair's).
// MOE_GROUPS (with MOE_IDS): the same products over pairs grouped by expert (moe_group.comp's
// list in binding 3; binding 4 unused), for steps whose experts get a few pairs each: grid y is
// the expert, and its workgroups walk its pairs NUM_COLS at a time, so each of its weight rows is
// read once per NUM_COLS pairs instead of once per pair. x rows: the pair's (x_per_pair) or its
// token's; y rows: the pair's (the caller combines them per token).

// NORM_IN (float activations, subgroup reduction): x is RMS-normalized as it is read, x * w /
// rms(x) with the norm weight w (binding NORM_W_BINDING), so the RMSNorm between a residual
// product and this one needs no dispatch of its own: each workgroup reads the whole of x anyway,
// sums its squares in the same loop and scales its dot products by 1 / rms(x) at the end.

#extension GL_EXT_control_flow_attributes : enable
#ifndef REDUCE_SHARED
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#endif

#ifdef INT_DOT
#include "dequant_int8.glsl"
#else
#include "dequant_weights.glsl"
#endif

layout(local_size_x_id = 0) in;                     // threads; a power of two
layout(constant_id = 1) const uint NUM_ROWS = 2u;   // weight rows per workgroup
layout(constant_id = 2) const uint NUM_COLS = 1u;   // activation vectors per workgroup (<= 8)

#ifdef INT_DOT
// q8 activations: n_cols x k int8 values (packed 16 per uvec4), then per 32-block (dx, sx).
layout(std430, binding = 1) readonly buffer XQ { uvec4 xq4[]; };
layout(std430, binding = 1) readonly buffer XD { vec2 xds[]; };
#else
layout(std430, binding = 1) readonly buffer X { vec4 xv[]; };
#endif
#ifdef ROPE_KV_EPILOGUE
layout(std430, binding = 2) writeonly buffer Y { float y[]; };  // Q rows
#define META_BINDING 3
#include "kv_meta.glsl"
layout(std430, binding = 4) writeonly buffer KCache { uint k_cache[]; };  // f16 pairs
layout(std430, binding = 5) writeonly buffer VCache { uint v_cache[]; };
layout(std430, binding = 6) readonly buffer Factors { float freq_factors[]; };
#include "rope_angle.glsl"
#else
layout(std430, binding = 2) buffer Y { float y[]; };
#endif
#ifdef MOE_IDS
#if defined(ROPE_KV_EPILOGUE) || defined(NORM_IN) || (defined(INT_DOT) && defined(MOE_GROUPS))
#error "MOE_IDS takes no epilogue or normalized input, and MOE_GROUPS float activations"
#endif
layout(std430, binding = 3) readonly buffer MoeIds { uint moe_ids[]; };
layout(std430, binding = 4) readonly buffer MoeWeights { float moe_weights[]; };
#endif
#ifdef MOE_GROUPS
#ifndef MOE_IDS
#error "MOE_GROUPS is built on MOE_IDS"
#endif
const uint MOE_MAX_EXPERTS = 512u;  // kMoeMaxExperts: where moe_group.comp's offsets and list start
shared uint moe_x_cols[NUM_COLS];   // the chunk's x rows
shared uint moe_y_cols[NUM_COLS];   // and its y rows
#endif

#ifdef NORM_IN
#if defined(INT_DOT) || defined(REDUCE_SHARED)
#error "NORM_IN is a float-activation, subgroup-reduction variant"
#endif
#ifdef ROPE_KV_EPILOGUE
#define NORM_W_BINDING 7
#else
#define NORM_W_BINDING 3
#endif
layout(std430, binding = NORM_W_BINDING) readonly buffer NormInW { vec4 norm_in_w[]; };
#endif

layout(push_constant) uniform Params {
  uint n_rows;    // N
  uint k;         // K: a multiple of QK
  uint n_cols;    // activation vectors in total
  uint x_stride;  // elements between activation vectors (a multiple of 4)
  uint y_stride;  // elements between output vectors
  uint w_off;     // byte offset of W in binding 0 (a multiple of 16)
  uint x_off;     // element offset of x in binding 1 (a multiple of 4); INT_DOT: index of the
                  // first (dx, sx) pair
  uint y_off;     // element offset of y in binding 2
  uint flags;     // bit 0: add into y instead of overwriting it (fused residual add)
#ifdef ROPE_KV_EPILOGUE
  uint head_dim;    // even
  uint n_dims;      // rotated dimensions of a head (even, <= head_dim)
  uint q_rows;      // Q rows, then kv_rows of K and kv_rows of V (multiples of head_dim)
  uint kv_rows;
  uint row_base;    // where this product's rows start among those (a product of Q, K or V alone)
  uint n_seqs;      // batch metadata (kv_meta.glsl); its tokens are the n_cols vectors
  uint block_size;  // tokens per cache block
  uint rope_flags;  // bit 1: divide angles by freq_factors
  float freq_base;
  float freq_scale;
#endif
#ifdef NORM_IN
  float norm_eps;  // x's RMSNorm: x * w / sqrt(mean(x^2) + norm_eps)
#endif
#ifdef MOE_IDS
  uint expert_bytes;  // bytes per expert of W
  uint n_used;        // experts per token
  uint x_per_pair;    // 1: x has a row per pair; 0: per token (moe_combine 0 only)
  uint moe_combine;
#endif
} p;

#ifdef NORM_IN
shared float norm_partial[(gl_WorkGroupSize.x / 4u) * NUM_COLS];
#endif
#ifdef REDUCE_SHARED
shared float partial[gl_WorkGroupSize.x * NUM_ROWS * NUM_COLS];
#else
// One slot per subgroup; subgroups have at least 4 lanes on every device we know of.
shared float partial[(gl_WorkGroupSize.x / 4u) * NUM_ROWS * NUM_COLS];
#endif

void main() {
  dequant_init();
  barrier();

  const uint row_group = gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x;
#ifdef ROPE_KV_EPILOGUE
#if defined(REDUCE_SHARED)
#error "ROPE_KV_EPILOGUE is a subgroup-reduction variant of its own"
#endif
  const uint row0 = 2u * row_group;  // the pair's first row
#define WEIGHT_ROW(r) (row0 + (r))
#else
  const uint row0 = row_group * NUM_ROWS;
  // Tail rows compute a duplicate, unstored.
#define WEIGHT_ROW(r) min(row0 + (r), p.n_rows - 1u)
#endif
  if (row0 >= p.n_rows) return;  // whole workgroup: no barrier is skipped by part of it
  const uint tid = gl_LocalInvocationID.x;
#ifdef MOE_GROUPS
  const uint moe_e = gl_WorkGroupID.y;
  const uint n_cols = moe_ids[moe_e];  // the expert's pairs
  if (n_cols == 0u) return;            // uniform, as above
  const uint moe_list = 2u * MOE_MAX_EXPERTS + moe_ids[MOE_MAX_EXPERTS + moe_e];
  for (uint col0 = 0u; col0 < n_cols; col0 += NUM_COLS) {
    if (tid < NUM_COLS) {
      // Columns past the expert's pairs repeat its last one: computed, never stored.
      const uint q = moe_ids[moe_list + min(col0 + tid, n_cols - 1u)];
      moe_x_cols[tid] = p.x_per_pair != 0u ? q : q / p.n_used;
      moe_y_cols[tid] = q;
    }
    barrier();
#define Y_COL(c) moe_y_cols[c]
#else
  const uint col0 = gl_WorkGroupID.y * NUM_COLS;
  const uint n_cols = p.n_cols;
#define Y_COL(c) (col0 + (c))
#endif

  const uint blocks_per_row = p.k / QK;
  const uint units_per_block = QK / uint(UNIT);
  const uint units = p.k / uint(UNIT);
  const uint x_col_stride = p.x_stride >> 2;

  float acc[NUM_ROWS * NUM_COLS];
  [[unroll]] for (uint i = 0u; i < NUM_ROWS * NUM_COLS; ++i) acc[i] = 0.0;

#ifdef INT_DOT
  // Neighbouring invocations take neighbouring 32-weight groups; each group's weights are
  // decoded once for all NUM_COLS activation blocks.
  const uint groups = p.k / 32u;
  const uint groups_per_block = QK / 32u;
#ifdef MOE_IDS
  // As the float variant below: a combine's n_used products are one flat range of groups, each
  // with its expert's rows, its pair's q8 row and its router weight.
  const uint moe_passes = p.moe_combine != 0u ? p.n_used : 1u;
  for (uint lu = tid; lu < groups * moe_passes; lu += gl_WorkGroupSize.x) {
    const uint pass = lu / groups;
    const uint u = lu - pass * groups;
    const uint q = p.moe_combine != 0u ? col0 * p.n_used + pass : col0;
    const uint w_base = p.w_off + moe_ids[q] * p.expert_bytes;
    const uint x_col = p.moe_combine != 0u || p.x_per_pair != 0u ? q : q / p.n_used;
    const float x_scale = p.moe_combine != 0u ? moe_weights[q] : 1.0;
#define Q8_COL(c) x_col
#define Q8_SCALE(v) ((v) * x_scale)
#else
  const uint w_base = p.w_off;
#define Q8_COL(c) (col0 + (c))
#define Q8_SCALE(v) (v)
  for (uint u = tid; u < groups; u += gl_WorkGroupSize.x) {
#endif
    const uint kb = u / groups_per_block;
    const uint g = u % groups_per_block;
    uint wqs[NUM_ROWS * 8u];
    vec3 ws[NUM_ROWS];
    [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r) {
      const uint row = WEIGHT_ROW(r);
      uint qr[8];
      qgroup(w_base + (row * blocks_per_row + kb) * QBYTES, g, qr, ws[r]);
      [[unroll]] for (uint j = 0u; j < 8u; ++j) wqs[r * 8u + j] = qr[j];
    }
    [[unroll]] for (uint c = 0u; c < NUM_COLS; ++c) {
      if (col0 + c < n_cols) {
        const uint xb = Q8_COL(c) * groups + u;
        const uvec4 xa = xq4[2u * xb], xc = xq4[2u * xb + 1u];
        const vec2 ds = xds[p.x_off + xb];
        [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r) {
          int lo = dot4(wqs[r * 8u + 0u], xa.x, 0);
          lo = dot4(wqs[r * 8u + 1u], xa.y, lo);
          lo = dot4(wqs[r * 8u + 2u], xa.z, lo);
          lo = dot4(wqs[r * 8u + 3u], xa.w, lo);
          int hi = dot4(wqs[r * 8u + 4u], xc.x, 0);
          hi = dot4(wqs[r * 8u + 5u], xc.y, hi);
          hi = dot4(wqs[r * 8u + 6u], xc.z, hi);
          hi = dot4(wqs[r * 8u + 7u], xc.w, hi);
#ifdef QGROUP_ONE_SCALE
          float v = (ds.x * ws[r].x) * float(lo + hi);
#else
          float v = ds.x * (ws[r].x * float(lo) + ws[r].y * float(hi));
#endif
#ifdef QGROUP_OFFSET
          v += ws[r].z * ds.y;
#endif
          acc[r * NUM_COLS + c] += Q8_SCALE(v);
        }
      }
    }
  }
#undef Q8_COL
#undef Q8_SCALE
#else
  // Neighbouring invocations take neighbouring decode units, so a subgroup reads contiguous
  // weight bytes and activations; each activation vec4 is loaded once for all NUM_ROWS rows.
#ifdef NORM_IN
  float sumsq[NUM_COLS];
  [[unroll]] for (uint c = 0u; c < NUM_COLS; ++c) sumsq[c] = 0.0;
#endif
#if defined(MOE_IDS) && !defined(MOE_GROUPS)
  // One pass per product this item sums (moe_combine: its token's n_used pairs), each with its
  // expert's rows, its x row and its router weight. The passes' decode units are one flat range,
  // so an invocation's loads for different experts are independent (a loop over passes around
  // the unit loop made each workgroup wait on its n_used experts one after another).
  const uint moe_passes = p.moe_combine != 0u ? p.n_used : 1u;
  for (uint lu = tid; lu < units * moe_passes; lu += gl_WorkGroupSize.x) {
    const uint pass = lu / units;
    const uint u = lu - pass * units;
    const uint q = p.moe_combine != 0u ? col0 * p.n_used + pass : col0;
    const uint w_base = p.w_off + moe_ids[q] * p.expert_bytes;
    const uint x_col = p.moe_combine != 0u || p.x_per_pair != 0u ? q : q / p.n_used;
    const float x_scale = p.moe_combine != 0u ? moe_weights[q] : 1.0;
#define X_COL(c) x_col
#define X_SCALE(v) ((v) * x_scale)
#else
#ifdef MOE_GROUPS
  const uint w_base = p.w_off + moe_e * p.expert_bytes;
#define X_COL(c) moe_x_cols[c]
#else
  const uint w_base = p.w_off;
#define X_COL(c) (col0 + (c))
#endif
#define X_SCALE(v) (v)
  for (uint u = tid; u < units; u += gl_WorkGroupSize.x) {
#endif
    const uint kb = u / units_per_block;
    const uint ub = u % units_per_block;
    vec4 w[NUM_ROWS * uint(UNIT / 4)];
    [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r) {
      const uint row = WEIGHT_ROW(r);
      vec4 wr[UNIT / 4];
      dequant_unit(w_base + (row * blocks_per_row + kb) * QBYTES, ub, wr);
      [[unroll]] for (uint v = 0u; v < uint(UNIT / 4); ++v) w[r * uint(UNIT / 4) + v] = wr[v];
    }
    [[unroll]] for (uint c = 0u; c < NUM_COLS; ++c) {
      if (col0 + c < n_cols) {
        const uint xb = ((p.x_off + kb * QK) >> 2) + X_COL(c) * x_col_stride;
        [[unroll]] for (uint v = 0u; v < uint(UNIT / 4); ++v) {
#ifdef NORM_IN
          const vec4 x_raw = xv[xb + (unit_pos(ub, v) >> 2)];
          sumsq[c] += dot(x_raw, x_raw);
          const vec4 xs = x_raw * norm_in_w[(kb * QK + unit_pos(ub, v)) >> 2];
#else
          const vec4 xs = X_SCALE(xv[xb + (unit_pos(ub, v) >> 2)]);
#endif
          [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r)
            acc[r * NUM_COLS + c] += dot(w[r * uint(UNIT / 4) + v], xs);
        }
      }
    }
  }
#undef X_COL
#undef X_SCALE
#endif
#ifdef NORM_IN
  // The whole workgroup saw all of x: its sum of squares scales the partial dot products (the
  // same factor for every invocation, so before their reduction).
  [[unroll]] for (uint c = 0u; c < NUM_COLS; ++c) sumsq[c] = subgroupAdd(sumsq[c]);
  if (subgroupElect()) {
    [[unroll]] for (uint c = 0u; c < NUM_COLS; ++c)
      norm_partial[c * gl_NumSubgroups + gl_SubgroupID] = sumsq[c];
  }
  barrier();
  [[unroll]] for (uint c = 0u; c < NUM_COLS; ++c) {
    float total = 0.0;
    for (uint s = 0u; s < gl_NumSubgroups; ++s) total += norm_partial[c * gl_NumSubgroups + s];
    const float inv = inversesqrt(total / float(p.k) + p.norm_eps);
    [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r) acc[r * NUM_COLS + c] *= inv;
  }
#endif

#ifdef REDUCE_SHARED
  [[unroll]] for (uint i = 0u; i < NUM_ROWS * NUM_COLS; ++i)
    partial[i * gl_WorkGroupSize.x + tid] = acc[i];
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
    if (tid < s) {
      [[unroll]] for (uint i = 0u; i < NUM_ROWS * NUM_COLS; ++i)
        partial[i * gl_WorkGroupSize.x + tid] += partial[i * gl_WorkGroupSize.x + tid + s];
    }
    barrier();
  }
  for (uint i = tid; i < NUM_ROWS * NUM_COLS; i += gl_WorkGroupSize.x) {
    const float sum = partial[i * gl_WorkGroupSize.x];
#else
  // With several sums per invocation (NUM_ROWS x NUM_COLS, 16 for 8 vectors), one subgroupAdd
  // each costs log2(subgroup) exchanges per sum, about as much as the dot products of a short
  // row. Halving exchanges instead: each step a lane keeps half of its sums and adds its
  // partner's other half, so after log2(N) steps each lane holds one sum (index idx) over
  // subgroup / N lanes, and a few plain exchanges finish it: N - 1 + log2(subgroup / N)
  // exchanges in all instead of N log2(subgroup). The sums then go through shared memory.
  const uint N = NUM_ROWS * NUM_COLS;
  // Only with every lane active (a workgroup smaller than a subgroup leaves some idle, and a
  // shuffle from an idle lane is undefined). N as large as the subgroup takes log2(N) halving
  // steps from the subgroup's half and no plain exchange.
  const bool scatter = N >= 4u && N <= 32u && (N & (N - 1u)) == 0u &&
                       gl_SubgroupSize >= N && gl_WorkGroupSize.x % gl_SubgroupSize == 0u;
  const bool via_shared = scatter || gl_NumSubgroups > 1u;
  if (scatter) {
    const uint lane = gl_SubgroupInvocationID;
    uint off = gl_SubgroupSize / 2u, idx = 0u;
#define SCATTER_STEP(H)                                                \
  if (N >= 2u * (H)) {                                                 \
    const bool upper = (lane & off) != 0u;                             \
    [[unroll]] for (uint j = 0u; j < (H); ++j) {                       \
      const float send = upper ? acc[j] : acc[j + (H)];                \
      const float keep = upper ? acc[j + (H)] : acc[j];                \
      acc[j] = keep + subgroupShuffleXor(send, off);                   \
    }                                                                  \
    if (upper) idx += (H);                                             \
    off /= 2u;                                                         \
  }
    SCATTER_STEP(16u)
    SCATTER_STEP(8u)
    SCATTER_STEP(4u)
    SCATTER_STEP(2u)
    SCATTER_STEP(1u)
#undef SCATTER_STEP
    for (; off > 0u; off /= 2u) acc[0] += subgroupShuffleXor(acc[0], off);
    if ((lane & (gl_SubgroupSize / N - 1u)) == 0u)
      partial[idx * gl_NumSubgroups + gl_SubgroupID] = acc[0];
    barrier();
  } else {
    [[unroll]] for (uint i = 0u; i < NUM_ROWS * NUM_COLS; ++i) acc[i] = subgroupAdd(acc[i]);
    if (gl_NumSubgroups > 1u) {
      if (subgroupElect()) {
        [[unroll]] for (uint i = 0u; i < NUM_ROWS * NUM_COLS; ++i)
          partial[i * gl_NumSubgroups + gl_SubgroupID] = acc[i];
      }
      barrier();
    }
  }
#ifndef ROPE_KV_EPILOGUE
  for (uint i = tid; i < NUM_ROWS * NUM_COLS; i += gl_WorkGroupSize.x) {
    float sum = 0.0;
    if (via_shared) {
      for (uint s = 0u; s < gl_NumSubgroups; ++s) sum += partial[i * gl_NumSubgroups + s];
    } else {
      // Lane i holds every total after subgroupAdd; pick the one for slot i without indexing
      // acc dynamically (which would push it to local memory).
      [[unroll]] for (uint j = 0u; j < NUM_ROWS * NUM_COLS; ++j)
        if (j == i) sum = acc[j];
    }
#endif
#endif
#ifdef ROPE_KV_EPILOGUE
  // Invocation c < NUM_COLS takes column c's totals of the workgroup's two rows.
  float pair0 = 0.0, pair1 = 0.0;
  if (tid < NUM_COLS) {
    if (via_shared) {
      for (uint s = 0u; s < gl_NumSubgroups; ++s) {
        pair0 += partial[tid * gl_NumSubgroups + s];
        pair1 += partial[(NUM_COLS + tid) * gl_NumSubgroups + s];
      }
    } else {
      [[unroll]] for (uint j = 0u; j < NUM_COLS; ++j) {
        if (j == tid) {
          pair0 = acc[j];
          pair1 = acc[NUM_COLS + j];
        }
      }
    }
  }
#endif
#ifdef ROPE_KV_EPILOGUE
  if (tid < NUM_COLS && col0 + tid < p.n_cols) {
    const uint t = col0 + tid;
    const uint k_start = p.q_rows, v_start = p.q_rows + p.kv_rows;
    const uint vrow = p.row_base + row0;
    const uint region = vrow < k_start ? 0u : (vrow < v_start ? 1u : 2u);  // Q, K, V
    const uint local = vrow - (region == 0u ? 0u : (region == 1u ? k_start : v_start));
    const uint h = local / p.head_dim, d = local % p.head_dim;
    float a = pair0, b = pair1;
    if (region < 2u && d < p.n_dims) {
      const uint i = d / 2u;
      float theta =
          rope_angle(float(meta_token_pos(p.n_cols, t)), i, p.n_dims, p.freq_base, p.freq_scale);
      if ((p.rope_flags & 2u) != 0u) theta /= freq_factors[i];
      const float c = cos(theta), s = sin(theta);
      a = pair0 * c - pair1 * s;
      b = pair1 * c + pair0 * s;
    }
    if (region == 0u) {
      const uint at = p.y_off + t * p.y_stride + row0;
      y[at] = a;
      y[at + 1u] = b;
    } else {
      const uint seq = meta_token_seq(p.n_cols, t);
      const uint ipos = meta_token_pos(p.n_cols, t);
      const uint block = meta_block(meta_seq_table(p.n_cols, p.n_seqs, seq), ipos, p.block_size);
      const uint kv_heads = p.kv_rows / p.head_dim;
      const uint word =
          (((block * kv_heads + h) * p.block_size + ipos % p.block_size) * p.head_dim + d) / 2u;
      if (region == 1u)
        k_cache[word] = packHalf2x16(vec2(a, b));
      else
        v_cache[word] = packHalf2x16(vec2(a, b));
    }
  }
#else
    const uint r = i / NUM_COLS, c = i % NUM_COLS;
    if (row0 + r < p.n_rows && col0 + c < n_cols) {
      const uint at = p.y_off + Y_COL(c) * p.y_stride + row0 + r;
      y[at] = ((p.flags & 1u) != 0u ? y[at] : 0.0) + sum;
    }
  }
#endif
#ifdef MOE_GROUPS
    barrier();  // the next chunk rewrites partial[] and its rows
  }
#endif
}
