#version 450
// Activations for the int8-dot matvec (matvec.comp INT_DOT): n_cols vectors of k floats
// (x_stride apart) to blocks of 32 int8 values q = roundEven(x / dx), dx = max|x| / 127, plus
// sx = dx * sum(q) for the weights' offset terms. Output layout (binding 1):
//   bytes [0, n_cols * k)             the int8 values, vector after vector
//   then n_cols * k / 32 (dx, sx)     f32 pairs, one per block, in the same order
// One invocation per block: it is a few kilobytes per decode step, next to megabytes of weights.

#extension GL_EXT_control_flow_attributes : enable

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { vec4 xv[]; };
layout(std430, binding = 1) writeonly buffer QS { uvec4 qs[]; };
layout(std430, binding = 1) writeonly buffer DS { vec2 ds[]; };

layout(push_constant) uniform Params {
  uint k;         // elements per vector, a multiple of 32
  uint n_cols;    // vectors
  uint x_stride;  // elements between vectors of x (a multiple of 4)
} p;

uint pack4(vec4 v) {
  const ivec4 q = ivec4(v);
  return uint(q.x & 255) | (uint(q.y & 255) << 8) | (uint(q.z & 255) << 16) | (uint(q.w & 255) << 24);
}

void main() {
  const uint blocks = p.k / 32u;
  const uint b = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x *
                                               gl_WorkGroupSize.x;
  if (b >= blocks * p.n_cols) return;
  const uint col = b / blocks, kb = b % blocks;
  const uint xb = (col * p.x_stride + kb * 32u) >> 2;
  vec4 v[8];
  float amax = 0.0;
  [[unroll]] for (uint i = 0u; i < 8u; ++i) {
    v[i] = xv[xb + i];
    const vec4 a = abs(v[i]);
    amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
  }
  const float d = amax / 127.0;
  const float id = amax > 0.0 ? 127.0 / amax : 0.0;
  uint w[8];
  float sum = 0.0;
  [[unroll]] for (uint i = 0u; i < 8u; ++i) {
    const vec4 q = clamp(roundEven(v[i] * id), -127.0, 127.0);
    sum += (q.x + q.y) + (q.z + q.w);
    w[i] = pack4(q);
  }
  qs[2u * b] = uvec4(w[0], w[1], w[2], w[3]);
  qs[2u * b + 1u] = uvec4(w[4], w[5], w[6], w[7]);
  ds[(p.n_cols * p.k) / 8u + b] = vec2(d, d * sum);
}
