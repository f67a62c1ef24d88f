#version 450
// RMSNorm with its weight multiply, optionally fused with the residual add before it:
//   h = x (+ r, written back into x when ADD), y = h / sqrt(mean(h^2) + eps) * w.
// One workgroup per row; rows are contiguous vectors of n elements. Per-head Q/K norms (Qwen3,
// Gemma 3) are the same kernel with n = head_dim and rows = tokens * heads.
// Q8_OUT: y is also written as q8 blocks (binding 4, q8_block.glsl) for the int8-dot matvec;
// n a multiple of 32 and rows dense (y_stride = n).

#include "reduce.glsl"
#ifdef Q8_OUT
#extension GL_EXT_control_flow_attributes : enable
#include "q8_block.glsl"
#endif

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer R { float r[]; };
layout(std430, binding = 2) readonly buffer W { float w[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params {
  uint n;         // row length
  uint n_rows;
  uint x_stride;  // elements between rows of x (and r)
  uint y_stride;  // elements between rows of y
  float eps;
  uint flags;     // bit 0: add r into x first (and store the sum in x); bit 1: no weight multiply
} p;

void main() {
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= p.n_rows) return;  // uniform across the workgroup
  const uint t = gl_LocalInvocationIndex;
  const uint nt = gl_WorkGroupSize.x;
  const uint xb = row * p.x_stride;
  const bool add = (p.flags & 1u) != 0u;
  float ss = 0.0;
  for (uint i = t; i < p.n; i += nt) {
    float v = x[xb + i];
    if (add) {
      v += r[xb + i];
      x[xb + i] = v;
    }
    ss += v * v;
  }
  ss = workgroup_sum(ss);
  const float inv = inversesqrt(ss / float(p.n) + p.eps);
  const uint yb = row * p.y_stride;
  const bool mul = (p.flags & 2u) == 0u;
  // Each invocation re-reads only the elements it wrote itself: no barrier needed.
  for (uint i = t; i < p.n; i += nt) y[yb + i] = x[xb + i] * inv * (mul ? w[i] : 1.0);
#ifdef Q8_OUT
  // Each block of 32 outputs is recomputed from x by one invocation (same expression, same
  // values as y); x written by the residual add above must be visible first.
  memoryBarrierBuffer();
  barrier();
  const uint nb = p.n / 32u;
  for (uint b = t; b < nb; b += nt) {
    vec4 v[8];
    [[unroll]] for (uint i = 0u; i < 8u; ++i) {
      const uint e = 32u * b + 4u * i;
      v[i] = vec4(x[xb + e], x[xb + e + 1u], x[xb + e + 2u], x[xb + e + 3u]) * inv;
      if (mul) v[i] *= vec4(w[e], w[e + 1u], w[e + 2u], w[e + 3u]);
    }
    q8_store_block(row * nb + b, p.n_rows * nb, v);
  }
#endif
}
