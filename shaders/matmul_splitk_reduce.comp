#version 450
// Second pass of the split-K tensor-core GEMM (matmul_coopmat.comp, bit 2 of its flags): y[m][n]
// (+)= sum over splits s of part[s * part_stride + m * part_ld + n]. One invocation per output
// element, neighbours along n (contiguous in both buffers); grid y walks the tokens.
// NORM_EPILOGUE: then, for the products whose sum is the residual stream a norm reads next, the
// last workgroup of each token RMS-normalizes that token's y row: norm_y = y / rms(y) * w (and
// its f16 rows, the next GEMM's input, with bit 1 of flags), saving the norm's dispatch and
// barrier. Workgroups count themselves per token in `done` (left at 0 again by the last one); y
// is coherent so that the last one reads what the others wrote. Needs n_rows even and a
// subgroup-arithmetic device.

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Part { float part[]; };
#ifdef NORM_EPILOGUE
#include "reduce.glsl"
layout(std430, binding = 1) coherent buffer Y { float y[]; };
layout(std430, binding = 2) readonly buffer W { vec2 norm_w[]; };
layout(std430, binding = 3) writeonly buffer NormY { vec2 norm_y[]; };
layout(std430, binding = 4) writeonly buffer NormY16 { uint norm_y16[]; };
layout(std430, binding = 5) coherent buffer Done { uint done[]; };
shared bool last_group;
#else
layout(std430, binding = 1) buffer Y { float y[]; };
#endif

layout(push_constant) uniform Params {
  uint n_rows;       // N
  uint n_cols;       // M: tokens
  uint y_stride;     // elements between token rows of y
  uint y_off;        // element offset of y in binding 1
  uint flags;        // bit 0: add into y; bit 1 (NORM_EPILOGUE): write the f16 rows too
  uint splits;       // partial tiles to sum
  uint part_ld;      // elements between token rows of a partial
  uint part_stride;  // elements between consecutive partials
#ifdef NORM_EPILOGUE
  float eps;
  uint norm_stride;  // elements between norm_y rows (even); the f16 rows are dense
#endif
} p;

void main() {
  const uint n = gl_GlobalInvocationID.x;
  const uint m = gl_WorkGroupID.y;
#ifdef NORM_EPILOGUE
  if (m >= p.n_cols) return;  // uniform across the workgroup
  if (n < p.n_rows) {
#else
  if (n >= p.n_rows || m >= p.n_cols) return;
  {
#endif
    const uint at = m * p.part_ld + n;
    float sum = 0.0;
    for (uint s = 0u; s < p.splits; ++s) sum += part[s * p.part_stride + at];
    const uint out_at = p.y_off + m * p.y_stride + n;
    if ((p.flags & 1u) != 0u) sum += y[out_at];
    y[out_at] = sum;
  }
#ifdef NORM_EPILOGUE
  const uint tid = gl_LocalInvocationIndex;
  memoryBarrierBuffer();
  barrier();
  if (tid == 0u) last_group = atomicAdd(done[m], 1u) == gl_NumWorkGroups.x - 1u;
  barrier();
  if (!last_group) return;
  memoryBarrierBuffer();
  if (tid == 0u) done[m] = 0u;
  const uint yb = p.y_off + m * p.y_stride;
  const uint wg = gl_WorkGroupSize.x;
  float ss = 0.0;
  for (uint i = 2u * tid; i < p.n_rows; i += 2u * wg) {
    const vec2 v = vec2(y[yb + i], y[yb + i + 1u]);
    ss += dot(v, v);
  }
  const float inv = inversesqrt(workgroup_sum(ss) / float(p.n_rows) + p.eps);
  for (uint i = 2u * tid; i < p.n_rows; i += 2u * wg) {
    const vec2 v = vec2(y[yb + i], y[yb + i + 1u]) * inv * norm_w[i / 2u];
    norm_y[(m * p.norm_stride + i) / 2u] = v;
    if ((p.flags & 2u) != 0u)
      norm_y16[(m * p.n_rows + i) / 2u] =
          packHalf2x16(clamp(v, vec2(-65504.0), vec2(65504.0)));
  }
#endif
}
