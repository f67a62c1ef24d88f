#version 450
// Rows between pair order and expert order for the workgroup-scope tensor-core GEMM of a
// mixture-of-experts FFN (matmul_cm2.comp built with MOE), whose tensor loads and stores take
// contiguous rows: each expert's pairs must be consecutive rows. `list` is moe_group.comp's
// groups buffer; its list (from word 2 * 512) names, for each position i in expert order, the
// pair q = t * n_used + k there.
//   GATHER:  sorted[i] = f16(x[q or q / n_used]), rows of cols halves (x_per_pair: x has a row
//            per pair, else per token), cols a multiple of 4;
//   SCATTER: y[q * y_stride + c] = sorted[i * cols + c] (f32 rows of cols).
// Grid: x over column groups (4 columns an invocation), y (+ z * num y) over positions i.

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Groups { uint groups[]; };
#ifdef GATHER
layout(std430, binding = 1) readonly buffer X { vec4 x[]; };
layout(std430, binding = 2) writeonly buffer Sorted { uvec2 sorted[]; };
#else
layout(std430, binding = 1) readonly buffer Sorted { vec4 sorted[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
#endif

layout(push_constant) uniform Params {
  uint cols;
  uint n_pairs;
  uint stride;  // GATHER: floats between x rows; SCATTER: floats between y rows
  uint x_per_pair_or_n_used;  // GATHER: 0 if x has a row per pair, else n_used; SCATTER: unused
} p;

const uint LIST = 2u * 512u;  // kMoeMaxExperts: where moe_group.comp's list starts

void main() {
  const uint c4 = gl_GlobalInvocationID.x;
  const uint i = gl_WorkGroupID.y + gl_WorkGroupID.z * gl_NumWorkGroups.y;
  if (4u * c4 >= p.cols || i >= p.n_pairs) return;
  const uint q = groups[LIST + i];
#ifdef GATHER
  const uint row = p.x_per_pair_or_n_used == 0u ? q : q / p.x_per_pair_or_n_used;
  const vec4 v = clamp(x[(row * p.stride) / 4u + c4], vec4(-65504.0), vec4(65504.0));
  sorted[(i * p.cols) / 4u + c4] = uvec2(packHalf2x16(v.xy), packHalf2x16(v.zw));
#else
  const vec4 v = sorted[(i * p.cols) / 4u + c4];
  const uint at = q * p.stride + 4u * c4;
  y[at] = v.x;
  y[at + 1u] = v.y;
  y[at + 2u] = v.z;
  y[at + 3u] = v.w;
#endif
}
