#version 450
// LayerNorm with weight and bias, in place or not: y = (x - mean(x)) / sqrt(var(x) + eps) * w + b
// (BERT-family encoders: after every residual add and on the summed input embeddings). One
// workgroup per row; the variance is the mean of squared deviations, computed in a second pass
// over the row so large means do not cancel.

#include "reduce.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) readonly buffer B { float b[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params {
  uint n;  // row length
  uint n_rows;
  float eps;
} p;

void main() {
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= p.n_rows) return;  // uniform across the workgroup
  const uint t = gl_LocalInvocationIndex;
  const uint nt = gl_WorkGroupSize.x;
  const uint base = row * p.n;
  float sum = 0.0;
  for (uint i = t; i < p.n; i += nt) sum += x[base + i];
  const float mean = workgroup_sum(sum) / float(p.n);
  float sq = 0.0;
  for (uint i = t; i < p.n; i += nt) {
    const float d = x[base + i] - mean;
    sq += d * d;
  }
  const float inv = inversesqrt(workgroup_sum(sq) / float(p.n) + p.eps);
  // Each invocation rewrites only the elements it read itself: y may alias x.
  for (uint i = t; i < p.n; i += nt) y[base + i] = (x[base + i] - mean) * inv * w[i] + b[i];
}
