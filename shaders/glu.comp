#version 450
// Gated FFN activation: out[r][i] = act(gate[r][i]) * up[r][i] for rows of n elements, with
// strides so gate and up can be the two halves of one fused gate|up projection; act as in
// glu_activation.glsl.
// Q8_OUT: out is also written as q8 blocks (binding 3, q8_block.glsl) for the int8-dot matvec;
// n a multiple of 32, rows dense in the q8 layout, workgroup size a multiple of 32.

layout(local_size_x_id = 0) in;
#include "glu_activation.glsl"
#ifdef Q8_OUT
#extension GL_EXT_control_flow_attributes : enable
#define Q8_BINDING 3
#include "q8_block.glsl"
shared float glu_vals[gl_WorkGroupSize.x];
#endif

layout(std430, binding = 0) readonly buffer Gate { float gate[]; };
layout(std430, binding = 1) readonly buffer Up { float up[]; };
layout(std430, binding = 2) writeonly buffer Out { float outv[]; };

layout(push_constant) uniform Params {
  uint n;  // elements per row
  uint n_rows;
  uint act;
  uint gate_off, gate_stride;  // elements
  uint up_off, up_stride;
  uint out_off, out_stride;
} p;

void main() {
  const uint i = gl_GlobalInvocationID.x;
  const uint r = gl_WorkGroupID.y + gl_WorkGroupID.z * gl_NumWorkGroups.y;
  const bool live = i < p.n && r < p.n_rows;
  float o = 0.0;
  if (live) {
    const float g = gate[p.gate_off + r * p.gate_stride + i];
    o = glu_gate(p.act, g) * up[p.up_off + r * p.up_stride + i];
    outv[p.out_off + r * p.out_stride + i] = o;
  }
#ifdef Q8_OUT
  // The first invocation of each 32 gathers its block (blocks never straddle workgroups).
  const uint t = gl_LocalInvocationID.x;
  glu_vals[t] = o;
  barrier();
  if (live && (t & 31u) == 0u) {
    vec4 v[8];
    [[unroll]] for (uint j = 0u; j < 8u; ++j)
      v[j] = vec4(glu_vals[t + 4u * j], glu_vals[t + 4u * j + 1u], glu_vals[t + 4u * j + 2u],
                  glu_vals[t + 4u * j + 3u]);
    q8_store_block((r * p.n + i) / 32u, p.n_rows * (p.n / 32u), v);
  }
#endif
}
