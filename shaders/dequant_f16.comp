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
layout(std430, binding = 1) writeonly buffer H4 { uvec4 h4[]; };

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
  uvec2 packed[UNIT / 4];
  [[unroll]] for (uint v = 0; v < UNIT / 4; ++v) {
    const vec4 c = clamp(w[v], vec4(-65504.0), vec4(65504.0));
    packed[v] = uvec2(packHalf2x16(c.xy), packHalf2x16(c.zw));
  }
  const uint e = row * p.k + block * QK + unit_pos(u, 0);
#if UNIT == 8
  // Units of 8 consecutive weights (the K-quants, Q8_0) go out as one 16-byte store.
  if (unit_pos(u, 1) == unit_pos(u, 0) + 4u && (e & 7u) == 0) {
    h4[e >> 3] = uvec4(packed[0], packed[1]);
    return;
  }
#endif
  [[unroll]] for (uint v = 0; v < UNIT / 4; ++v)
    h[(row * p.k + block * QK + unit_pos(u, v)) >> 2] = packed[v];
}
