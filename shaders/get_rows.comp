#version 450
// Embedding lookup: out[t][:] = scale * dequant(W[ids[t] - first_row][:]) for each token t. W is a ggml
// tensor [K contiguous, rows] in its block format (TYPE_* define, decoded by
// dequant_weights.glsl exactly as the matvec kernels decode it); out is f32.
// Grid: x covers the decode units of one row (QK / UNIT per block; the host sizes it for units
// of 4 elements, the smallest, so it does not depend on the decoder's UNIT), y the tokens.

#include "dequant_weights.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 1) readonly buffer Ids { uint ids[]; };
layout(std430, binding = 2) writeonly buffer Out { float outv[]; };

layout(push_constant) uniform Params {
  uint k;           // elements per row, a multiple of QK
  uint row_bytes;   // bytes per row of W
  uint n_rows;      // rows in W (ids outside are clamped to 0 and flagged by writing NaN)
  uint n_tokens;
  uint w_off;       // byte offset of W in binding 0 (a multiple of 16)
  uint ids_off;     // element offset into ids
  uint out_off;     // element offset into out
  uint out_stride;  // elements between output rows
  float scale;      // e.g. sqrt(n_embd) for Gemma, else 1
  uint first_row;   // id of W's first row (W is one part of a table split by rows)
  uint part;        // 1: tokens whose row is outside W are skipped (another part writes them)
} p;

void main() {
  dequant_init();
  barrier();
  const uint units_per_block = QK / uint(UNIT);
  const uint unit = gl_GlobalInvocationID.x;
  const uint t = gl_WorkGroupID.y;
  if (t >= p.n_tokens || unit >= (p.k / QK) * units_per_block) return;
  uint row = ids[p.ids_off + t] - p.first_row;  // ids below first_row wrap to huge values
  const bool bad = row >= p.n_rows;
  if (bad && p.part != 0u) return;
  if (bad) row = 0u;
  const uint blk = unit / units_per_block;
  const uint u = unit % units_per_block;
  vec4 w[UNIT / 4];
  dequant_unit(p.w_off + row * p.row_bytes + blk * QBYTES, u, w);
  const uint o = p.out_off + t * p.out_stride + blk * QK;
  [[unroll]] for (uint i = 0u; i < uint(UNIT / 4); ++i) {
    const vec4 v = bad ? vec4(uintBitsToFloat(0x7FC00000u)) : w[i] * p.scale;
    const uint e = o + unit_pos(u, i);
    outv[e] = v.x;
    outv[e + 1u] = v.y;
    outv[e + 2u] = v.z;
    outv[e + 3u] = v.w;
  }
}
