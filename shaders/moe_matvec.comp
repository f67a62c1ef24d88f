#version 450
// Indirect matrix-vector products over the experts a router selected (ggml's MUL_MAT_ID at
// decode sizes): the expert ids are read on the device, and only the selected experts' rows are
// read. W is a stacked ggml tensor [cols, rows, n_expert] in its block format (TYPE_* define,
// dequant_weights.glsl), expert e's rows starting at byte e * expert_bytes.
//
// One workgroup computes one output row of one item (grid x: rows, y (+ z * num y): items):
//   p.combine == 0: item = a (token, rank) pair q = t * n_used + k:
//                   y[q * y_stride + row] = W[ids[q]][row] . x[(x_per_pair ? q : t) * x_stride]
//   p.combine == 1: item = a token t:
//                   y[t * y_stride + row] += sum over k in rank order of
//                                            weights[q] * (W[ids[q]][row] . x[q * x_stride])
// (the gate/up products of the selected experts, and the down products summed into the
// residual with the router's weights: no race, one workgroup owns each output).

#include "dequant_weights.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 1) readonly buffer X { float xv[]; };
layout(std430, binding = 2) buffer Y { float yv[]; };
layout(std430, binding = 3) readonly buffer Ids { uint ids[]; };
layout(std430, binding = 4) readonly buffer Wts { float wts[]; };

layout(push_constant) uniform Params {
  uint cols;          // K, a multiple of QK
  uint rows;          // output rows of one expert
  uint row_bytes;     // bytes per row of W
  uint expert_bytes;  // bytes per expert of W
  uint n_used;        // experts per token
  uint n_items;       // pairs (combine 0) or tokens (combine 1)
  uint x_stride;      // floats between x rows
  uint y_stride;      // floats between y rows
  uint x_per_pair;    // 1: x has a row per pair; 0: per token
  uint combine;
} p;

shared float partial[gl_WorkGroupSize.x];

float row_dot(uint e, uint row, uint x_at) {
  const uint units_per_block = QK / uint(UNIT);
  const uint units = (p.cols / QK) * units_per_block;
  const uint w_at = e * p.expert_bytes + row * p.row_bytes;
  float acc = 0.0;
  for (uint unit = gl_LocalInvocationID.x; unit < units; unit += gl_WorkGroupSize.x) {
    const uint blk = unit / units_per_block;
    const uint u = unit % units_per_block;
    vec4 w[UNIT / 4];
    dequant_unit(w_at + blk * QBYTES, u, w);
    const uint o = x_at + blk * QK;
    [[unroll]] for (uint i = 0u; i < uint(UNIT / 4); ++i) {
      const uint c = o + unit_pos(u, i);
      acc += dot(w[i], vec4(xv[c], xv[c + 1u], xv[c + 2u], xv[c + 3u]));
    }
  }
  partial[gl_LocalInvocationID.x] = acc;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1u) {
    if (gl_LocalInvocationID.x < s) partial[gl_LocalInvocationID.x] += partial[gl_LocalInvocationID.x + s];
    barrier();
  }
  const float total = partial[0];
  barrier();  // partial is reused by the next call
  return total;
}

void main() {
  dequant_init();
  barrier();
  const uint row = gl_WorkGroupID.x;
  const uint item = gl_WorkGroupID.y + gl_WorkGroupID.z * gl_NumWorkGroups.y;
  // Uniform per workgroup: the barriers inside row_dot are reached by all or none.
  if (row >= p.rows || item >= p.n_items) return;
  if (p.combine == 0u) {
    const uint t = item / p.n_used;
    const float d = row_dot(ids[item], row, (p.x_per_pair != 0u ? item : t) * p.x_stride);
    if (gl_LocalInvocationID.x == 0u) yv[item * p.y_stride + row] = d;
  } else {
    float acc = 0.0;
    for (uint k = 0u; k < p.n_used; ++k) {
      const uint q = item * p.n_used + k;
      acc += wts[q] * row_dot(ids[q], row, q * p.x_stride);
    }
    if (gl_LocalInvocationID.x == 0u) yv[item * p.y_stride + row] += acc;
  }
}
