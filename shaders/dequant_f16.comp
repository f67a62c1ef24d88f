#version 450
// Weights of any block format (TYPE_* define, dequant_weights.glsl) decoded to f16 rows, for the
// workgroup-scope tensor-core GEMM (matmul_cm2.comp), which loads f16 only: rows row0 ..
// row0 + n_rows of a [rows x k] weight tensor to n_rows rows of k halves. At prefill sizes a
// product reads each weight from every token tile, so decoding once to f16 (2 bytes a weight,
// written and read back once) costs less than that GEMM gains over decoding in its loop.
// One invocation per decode unit (8 weights of a quantized block, 4 of a float one), neighbours
// on neighbouring units so that reads and writes coalesce.

#extension GL_EXT_control_flow_attributes : enable

#include "dequant_weights.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 1) writeonly buffer H { uvec2 h[]; };

layout(push_constant) uniform Params {
  uint n_rows;  // rows decoded
  uint k;       // elements per row: a multiple of QK
  uint row0;    // first weight row decoded
} p;

void main() {
  dequant_init();
  barrier();  // the lookup tables, where the type has them
  const uint units_per_block = QK / UNIT;
  const uint units_per_row = p.k / UNIT;
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x *
                                               gl_WorkGroupSize.x;
  if (i >= units_per_row * p.n_rows) return;
  const uint row = i / units_per_row, unit = i % units_per_row;
  const uint block = unit / units_per_block, u = unit % units_per_block;
  const uint off = ((p.row0 + row) * (p.k / QK) + block) * QBYTES;
  vec4 w[UNIT / 4];
  dequant_unit(off, u, w);
  [[unroll]] for (uint v = 0; v < UNIT / 4; ++v) {
    const uint e = row * p.k + block * QK + unit_pos(u, v);
    const vec4 c = clamp(w[v], vec4(-65504.0), vec4(65504.0));
    h[e >> 2] = uvec2(packHalf2x16(c.xy), packHalf2x16(c.zw));
  }
}
