#version 450
// The last step of the grouped mixture-of-experts FFN: each token's n_used down products (rows of
// `pairs`, one per (token, rank) pair q = t * n_used + k, as the grouped GEMM scattered them)
// weighted by the router and added into the residual:
//   y[t * y_stride + row] += sum over k in rank order of weights[q] * pairs[q * rows + row]
// in the same order and association as moe_matvec.comp's combine, so both paths round alike.
// Grid: x over rows, y (+ z * num y) over tokens.

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Pairs { float pairs[]; };
layout(std430, binding = 1) readonly buffer Weights { float weights[]; };
layout(std430, binding = 2) buffer Y { float y[]; };

layout(push_constant) uniform Params {
  uint rows;
  uint n_used;
  uint n_tokens;
  uint y_stride;
} p;

void main() {
  const uint row = gl_GlobalInvocationID.x;
  const uint t = gl_WorkGroupID.y + gl_WorkGroupID.z * gl_NumWorkGroups.y;
  if (row >= p.rows || t >= p.n_tokens) return;
  float acc = 0.0;
  for (uint k = 0u; k < p.n_used; ++k) {
    const uint q = t * p.n_used + k;
    acc += weights[q] * pairs[q * p.rows + row];
  }
  y[t * p.y_stride + row] += acc;
}
