#version 450
// Row ops that rescale or threshold a row by its own statistics. One workgroup per row:
//   mode 0 Gaussian top-k (Gemma 3n's activation sparsity): out = max(x - (mean + s * std), 0)
//          with the row's mean and its standard deviation over n - 1;
//   mode 1 match magnitude: out = x * |ref| / |x| (Euclidean norms; 0 where |x| is 0).
// out may alias x (each invocation writes only elements it read itself, after every read of the
// row is done: the reductions end in barriers). Sums in float with a workgroup reduction;
// the variance in a second pass over the row, so a large mean does not cancel.

#include "reduce.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Ref { float ref[]; };
layout(std430, binding = 2) writeonly buffer Out { float o[]; };

layout(push_constant) uniform Params {
  uint n;
  uint rows;
  uint mode;
  float s;  // mode 0: the multiple of the standard deviation above the mean
  uint x_off, x_stride;  // in elements
  uint r_off, r_stride;
  uint o_off, o_stride;
} p;

void main() {
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= p.rows) return;  // uniform across the workgroup
  const uint t = gl_LocalInvocationIndex;
  const uint nt = gl_WorkGroupSize.x;
  const uint xb = p.x_off + row * p.x_stride;
  const uint ob = p.o_off + row * p.o_stride;
  if (p.mode == 0u) {
    float sum = 0.0;
    for (uint i = t; i < p.n; i += nt) sum += x[xb + i];
    const float mean = workgroup_sum(sum) / float(p.n);
    float sq = 0.0;
    for (uint i = t; i < p.n; i += nt) {
      const float d = x[xb + i] - mean;
      sq += d * d;
    }
    const float var = workgroup_sum(sq) / float(max(p.n, 2u) - 1u);
    const float cutoff = mean + p.s * sqrt(var);
    for (uint i = t; i < p.n; i += nt) o[ob + i] = max(x[xb + i] - cutoff, 0.0);
  } else {
    const uint rb = p.r_off + row * p.r_stride;
    float want = 0.0, have = 0.0;
    for (uint i = t; i < p.n; i += nt) {
      const float r = ref[rb + i], v = x[xb + i];
      want += r * r;
      have += v * v;
    }
    want = workgroup_sum(want);
    have = workgroup_sum(have);
    const float k = have > 0.0 ? sqrt(want) / sqrt(have) : 0.0;
    for (uint i = t; i < p.n; i += nt) o[ob + i] = x[xb + i] * k;
  }
}
