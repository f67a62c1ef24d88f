#version 450
// Second pass of the split-K tensor-core GEMM (matmul_coopmat.comp, bit 2 of its flags): y[m][n]
// (+)= sum over splits s of part[s * part_stride + m * part_ld + n]. One invocation per output
// element, neighbours along n (contiguous in both buffers); grid y walks the tokens.

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Part { float part[]; };
layout(std430, binding = 1) buffer Y { float y[]; };

layout(push_constant) uniform Params {
  uint n_rows;       // N
  uint n_cols;       // M: tokens
  uint y_stride;     // elements between token rows of y
  uint y_off;        // element offset of y in binding 1
  uint flags;        // bit 0: add into y
  uint splits;       // partial tiles to sum
  uint part_ld;      // elements between token rows of a partial
  uint part_stride;  // elements between consecutive partials
} p;

void main() {
  const uint n = gl_GlobalInvocationID.x;
  const uint m = gl_WorkGroupID.y;
  if (n >= p.n_rows || m >= p.n_cols) return;
  const uint at = m * p.part_ld + n;
  float sum = 0.0;
  for (uint s = 0u; s < p.splits; ++s) sum += part[s * p.part_stride + at];
  const uint out_at = p.y_off + m * p.y_stride + n;
  if ((p.flags & 1u) != 0u) sum += y[out_at];
  y[out_at] = sum;
}
