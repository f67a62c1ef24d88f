#version 450
// Gated FFN activation: out[r][i] = act(gate[r][i]) * up[r][i] for rows of n elements, with
// strides so gate and up can be the two halves of one fused gate|up projection; act as in
// glu_activation.glsl. gate and up may also be the unsummed partials of a split-K product
// (MatmulKernels::SplitParts): each is then the sum of `splits` partials split_stride apart,
// added in the order the split-K reduction pass would add them.
// Q8_OUT: out is also written as q8 blocks (binding 3, q8_block.glsl) for the int8-dot matvec;
// n a multiple of 32, rows dense in the q8 layout, workgroup size a multiple of 32.
// F16_OUT: out is also written as f16 rows of n halves (binding 3), the tensor-core GEMM's input
// (to_f16.comp's values); n even, workgroup size even.

layout(local_size_x_id = 0) in;
#include "glu_activation.glsl"
#ifdef Q8_OUT
#extension GL_EXT_control_flow_attributes : enable
#define Q8_BINDING 3
#include "q8_block.glsl"
#endif
#if defined(Q8_OUT) || defined(F16_OUT)
shared float glu_vals[gl_WorkGroupSize.x];
#endif
#ifdef F16_OUT
layout(std430, binding = 3) writeonly buffer Out16 { uint out16[]; };
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
  uint splits;        // partials summed into gate and into up (1: plain rows)
  uint split_stride;  // elements between consecutive partials
} p;

void main() {
  const uint i = gl_GlobalInvocationID.x;
  const uint r = gl_WorkGroupID.y + gl_WorkGroupID.z * gl_NumWorkGroups.y;
  const bool live = i < p.n && r < p.n_rows;
  float o = 0.0;
  if (live) {
    const uint g_at = p.gate_off + r * p.gate_stride + i, u_at = p.up_off + r * p.up_stride + i;
    float g = gate[g_at], u = up[u_at];
    for (uint s = 1u; s < p.splits; ++s) {
      g += gate[g_at + s * p.split_stride];
      u += up[u_at + s * p.split_stride];
    }
    o = glu_value(p.act, g, u);
    outv[p.out_off + r * p.out_stride + i] = o;
  }
#if defined(Q8_OUT) || defined(F16_OUT)
  const uint t = gl_LocalInvocationID.x;
  glu_vals[t] = o;
  barrier();
#endif
#ifdef Q8_OUT
  // The first invocation of each 32 gathers its block (blocks never straddle workgroups).
  if (live && (t & 31u) == 0u) {
    vec4 v[8];
    [[unroll]] for (uint j = 0u; j < 8u; ++j)
      v[j] = vec4(glu_vals[t + 4u * j], glu_vals[t + 4u * j + 1u], glu_vals[t + 4u * j + 2u],
                  glu_vals[t + 4u * j + 3u]);
    q8_store_block((r * p.n + i) / 32u, p.n_rows * (p.n / 32u), v);
  }
#endif
#ifdef F16_OUT
  // Even invocations pack their value and the next one's (i even exactly when t is).
  if (live && (t & 1u) == 0u) {
    const vec2 v = clamp(vec2(o, glu_vals[t + 1u]), vec2(-65504.0), vec2(65504.0));
    out16[(r * p.n + i) / 2u] = packHalf2x16(v);
  }
#endif
}
