#version 450
// Row-wise binary ops over `rows` rows of n elements, every operand with its own element offset
// and row stride (Gemma 3n's AltUp keeps several vectors per token side by side, so the rows an
// op reads are often one vector of every token's group):
//   op 0 add:   out = (a + b) * s
//   op 1 mul:   out = a * b          (b_stride 0: the same row of b for every row, e.g. a weight)
//   op 2 scale: out = a * s          (b is not read)
//   op 3 row scale: out = a * b[b_off + r * b_stride] (one factor a row)
// out may alias a or b: each invocation reads its element before writing it. Rows run over y
// (in steps of the grid's height), elements over x.

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer Out { float o[]; };

layout(push_constant) uniform Params {
  uint n;
  uint rows;
  uint op;
  float s;
  uint a_off, a_stride;  // in elements
  uint b_off, b_stride;
  uint o_off, o_stride;
} p;

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= p.n) return;
  for (uint r = gl_WorkGroupID.y; r < p.rows; r += gl_NumWorkGroups.y) {
    const float x = a[p.a_off + r * p.a_stride + i];
    float v;
    if (p.op == 0u)
      v = (x + b[p.b_off + r * p.b_stride + i]) * p.s;
    else if (p.op == 1u)
      v = x * b[p.b_off + r * p.b_stride + i];
    else if (p.op == 3u)
      v = x * b[p.b_off + r * p.b_stride];
    else
      v = x * p.s;
    o[p.o_off + r * p.o_stride + i] = v;
  }
}
