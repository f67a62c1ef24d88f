#version 450
// Second pass of split-K attention: combines the n_splits partial results (unnormalised O and
// the running max m and sum l of each split, laid out by attention.comp) of every (token, query
// head) row: M = max m_s, w_s = exp(m_s - M), out = sum(w_s O_s) / sum(w_s l_s).
// One workgroup per row; grid x*y covers n_tokens * n_q_heads rows.
// Q8_OUT: the output is also written as q8 blocks (binding 2, q8_block.glsl) for the int8-dot
// matvec of the output projection, saving its quantize pass; needs dense rows (out_off 0,
// out_stride n_q_heads * head_dim) and head_dim a multiple of 32.

layout(local_size_x_id = 0) in;
#ifdef Q8_OUT
#extension GL_EXT_control_flow_attributes : enable
#define Q8_BINDING 2
#include "q8_block.glsl"
shared float row_out[256];
#endif

layout(std430, binding = 0) readonly buffer Partials { float part[]; };
layout(std430, binding = 1) writeonly buffer Out { float outv[]; };

layout(push_constant) uniform Params {
  uint n_tokens;
  uint n_q_heads;
  uint head_dim;
  uint n_splits;
  uint out_off, out_stride;
} p;

void main() {
  const uint rows = p.n_tokens * p.n_q_heads;
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= rows) return;
  const uint ml = p.n_splits * rows * p.head_dim;
  float m = uintBitsToFloat(0xFF800000u);
  for (uint s = 0u; s < p.n_splits; ++s) m = max(m, part[ml + (s * rows + row) * 2u]);
  float l = 0.0;
  for (uint s = 0u; s < p.n_splits; ++s) {
    const float ms = part[ml + (s * rows + row) * 2u];
    if (ms != uintBitsToFloat(0xFF800000u)) l += exp(ms - m) * part[ml + (s * rows + row) * 2u + 1u];
  }
  const uint t = row / p.n_q_heads, h = row % p.n_q_heads;
  const uint ob = p.out_off + t * p.out_stride + h * p.head_dim;
  for (uint d = gl_LocalInvocationIndex; d < p.head_dim; d += gl_WorkGroupSize.x) {
    float o = 0.0;
    for (uint s = 0u; s < p.n_splits; ++s) {
      const float ms = part[ml + (s * rows + row) * 2u];
      if (ms != uintBitsToFloat(0xFF800000u)) o += exp(ms - m) * part[(s * rows + row) * p.head_dim + d];
    }
    outv[ob + d] = l > 0.0 ? o / l : 0.0;
#ifdef Q8_OUT
    row_out[d] = l > 0.0 ? o / l : 0.0;
#endif
  }
#ifdef Q8_OUT
  barrier();
  const uint nb = p.head_dim / 32u;
  for (uint b = gl_LocalInvocationIndex; b < nb; b += gl_WorkGroupSize.x) {
    vec4 v[8];
    [[unroll]] for (uint i = 0u; i < 8u; ++i) {
      const uint e = 32u * b + 4u * i;
      v[i] = vec4(row_out[e], row_out[e + 1u], row_out[e + 2u], row_out[e + 3u]);
    }
    q8_store_block(row * nb + b, rows * nb, v);
  }
#endif
}
