#version 450
// Activations for the int8-dot matvec (matvec.comp INT_DOT): n_cols vectors of k floats
// (x_stride apart) to blocks of 32 int8 values q = roundEven(x / dx), dx = max|x| / 127, plus
// sx = dx * sum(q) for the weights' offset terms. Output layout (binding 1):
//   bytes [0, n_cols * k)             the int8 values, vector after vector
//   then n_cols * k / 32 (dx, sx)     f32 pairs, one per block, in the same order
// (written by q8_block.glsl, which rms_norm and glu share for their fused q8 outputs).
// One invocation per block: it is a few kilobytes per decode step, next to megabytes of weights.

#extension GL_EXT_control_flow_attributes : enable

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { vec4 xv[]; };
#define Q8_BINDING 1
#include "q8_block.glsl"

layout(push_constant) uniform Params {
  uint k;         // elements per vector, a multiple of 32
  uint n_cols;    // vectors
  uint x_stride;  // elements between vectors of x (a multiple of 4)
} p;

void main() {
  const uint blocks = p.k / 32u;
  const uint b = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x *
                                               gl_WorkGroupSize.x;
  if (b >= blocks * p.n_cols) return;
  const uint col = b / blocks, kb = b % blocks;
  const uint xb = (col * p.x_stride + kb * 32u) >> 2;
  vec4 v[8];
  [[unroll]] for (uint i = 0u; i < 8u; ++i) v[i] = xv[xb + i];
  q8_store_block(b, blocks * p.n_cols, v);
}
