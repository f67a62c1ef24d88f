#version 450
// Second pass of split-K attention: combines the n_splits partial results (unnormalised O and
// the running max m and sum l of each split, laid out by attention.comp) of every (token, query
// head) row: M = max m_s, w_s = exp(m_s - M), out = sum(w_s O_s) / sum(w_s l_s).
// One workgroup per row and 32 output dims; grid x*y covers n_tokens * n_q_heads rows, z the
// head_dim / 32 chunks. The workgroup spreads the splits over its invocations (long contexts split
// up to 256 ways, and a loop over them in one invocation would wait on one load after another):
// the max and the weights w_s split by split, then the output with 32 invocations (one chunk of
// dims) per group of splits.
// Q8_OUT: the output is also written as q8 blocks (binding 2, q8_block.glsl) for the int8-dot
// matvec of the output projection, saving its quantize pass; needs dense rows (out_off 0,
// out_stride n_q_heads * head_dim) and head_dim a multiple of 32.
// F16_OUT: the output is also written as f16 rows (binding 2) for the tensor-core output
// projection, saving its conversion pass; the same conditions.

#extension GL_EXT_control_flow_attributes : enable

layout(local_size_x_id = 0) in;  // a power of two, at least 32
#ifdef Q8_OUT
#define Q8_BINDING 2
#include "q8_block.glsl"
#endif
#ifdef F16_OUT
layout(std430, binding = 2) writeonly buffer Out16 { uint out16[]; };
#endif

layout(std430, binding = 0) readonly buffer Partials { float part[]; };
#include "attention_sinks.glsl"
layout(std430, binding = 1) writeonly buffer Out { float outv[]; };

layout(push_constant) uniform Params {
  uint n_tokens;
  uint n_q_heads;
  uint head_dim;  // at most kAttentionMaxHeadDim (engine/vulkan/attention.h)
  uint n_splits;  // at most 256
  uint out_off, out_stride;
} p;

const uint WG = gl_WorkGroupSize.x;
shared float weight[256];  // w_s, for up to kAttentionMaxSplits (engine/vulkan/attention.h)
shared float red[WG];
shared float row_out[32];

#define NEG_INF uintBitsToFloat(0xFF800000u)

void main() {
  const uint tid = gl_LocalInvocationIndex;
  const uint rows = p.n_tokens * p.n_q_heads;
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= rows) return;  // uniform
  const uint ml = p.n_splits * rows * p.head_dim;

  float m = NEG_INF;
  for (uint s = tid; s < p.n_splits; s += WG) m = max(m, part[ml + (s * rows + row) * 2u]);
  red[tid] = m;
  barrier();
  [[unroll]] for (uint h = WG / 2u; h > 0u; h >>= 1) {
    if (tid < h) red[tid] = max(red[tid], red[tid + h]);
    barrier();
  }
  m = red[0];
  barrier();

  float l = 0.0;
  for (uint s = tid; s < p.n_splits; s += WG) {
    const float ms = part[ml + (s * rows + row) * 2u];
    const float w = ms == NEG_INF ? 0.0 : exp(ms - m);  // a split that saw no key: weight 0
    weight[s] = w;
    l += w * part[ml + (s * rows + row) * 2u + 1u];
  }
  red[tid] = l;
  barrier();
  [[unroll]] for (uint h = WG / 2u; h > 0u; h >>= 1) {
    if (tid < h) red[tid] += red[tid + h];
    barrier();
  }
  l = red[0];
  barrier();

  // Output: groups of 32 invocations (this chunk's dims), each group over every groups-th split
  // with four loads in flight per invocation; then the groups' sums added.
  const uint groups = WG / 32u;
  const uint g = tid / 32u;
  const uint d = 32u * gl_WorkGroupID.z + tid % 32u;
  float o = 0.0;
  if (d < p.head_dim) {
    uint s = g;
    for (; s + 3u * groups < p.n_splits; s += 4u * groups) {
      float v[4];
      [[unroll]] for (uint i = 0u; i < 4u; ++i)
        v[i] = part[((s + i * groups) * rows + row) * p.head_dim + d];
      [[unroll]] for (uint i = 0u; i < 4u; ++i) o += weight[s + i * groups] * v[i];
    }
    for (; s < p.n_splits; s += groups) o += weight[s] * part[(s * rows + row) * p.head_dim + d];
  }
  red[tid] = o;
  barrier();
  if (tid < 32u) {
    float sum = 0.0;
    for (uint k = 0u; k < groups; ++k) sum += red[32u * k + tid];
    const float v = normalise_row(sum, m, l, row % p.n_q_heads);
    if (d < p.head_dim)
      outv[p.out_off + (row / p.n_q_heads) * p.out_stride + (row % p.n_q_heads) * p.head_dim + d] =
          v;
    row_out[tid] = v;
  }
#ifdef F16_OUT
  barrier();
  if (tid < 16u) {
    const vec2 v = clamp(vec2(row_out[2u * tid], row_out[2u * tid + 1u]), vec2(-65504.0),
                         vec2(65504.0));
    out16[(row * p.head_dim + 32u * gl_WorkGroupID.z) / 2u + tid] = packHalf2x16(v);
  }
#endif
#ifdef Q8_OUT
  // This chunk is one q8 block of the row (head_dim is a multiple of 32 here).
  barrier();
  if (tid == 0u) {
    vec4 v[8];
    [[unroll]] for (uint i = 0u; i < 8u; ++i)
      v[i] = vec4(row_out[4u * i], row_out[4u * i + 1u], row_out[4u * i + 2u],
                  row_out[4u * i + 3u]);
    const uint nb = p.head_dim / 32u;
    q8_store_block(row * nb + gl_WorkGroupID.z, rows * nb, v);
  }
#endif
}
