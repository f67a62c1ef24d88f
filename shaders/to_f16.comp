#version 450
// Activations for the tensor-core GEMM (matmul_coopmat.comp X_F16): n_cols rows of k floats
// (x_stride apart, from element x_off) to f16 rows of `stride` halves (k rounded up to 8, the
// tail zero), clamped to the f16 range as the GEMM's own conversion does. Converting once per
// product halves the bytes every output tile re-reads, and takes the conversion out of the
// GEMM's inner loop. One invocation per 8 halves.

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { vec4 xv[]; };
layout(std430, binding = 1) writeonly buffer H { uvec4 h[]; };

layout(push_constant) uniform Params {
  uint k;         // elements per row
  uint n_cols;    // rows
  uint x_stride;  // elements between rows of x (a multiple of 4)
  uint x_off;     // element offset of x (a multiple of 4)
  uint stride;    // halves between rows of the output: k rounded up to 8
} p;

uint pack_f16(vec2 v) { return packHalf2x16(clamp(v, vec2(-65504.0), vec2(65504.0))); }

void main() {
  const uint per_row = p.stride / 8u;
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x *
                                               gl_WorkGroupSize.x;
  if (i >= per_row * p.n_cols) return;
  const uint row = i / per_row, k0 = 8u * (i % per_row);
  const uint base = (p.x_off + row * p.x_stride + k0) >> 2;
  // k is a multiple of 4, so each vec4 is wholly inside the row or wholly past it.
  const vec4 a = k0 < p.k ? xv[base] : vec4(0.0);
  const vec4 b = k0 + 4u < p.k ? xv[base + 1u] : vec4(0.0);
  h[i] = uvec4(pack_f16(a.xy), pack_f16(a.zw), pack_f16(b.xy), pack_f16(b.zw));
}
