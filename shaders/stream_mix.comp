#version 450
// Mixing a token's k parallel residual streams (Gemma 3n's AltUp). Each row holds k vectors of n
// elements side by side (vector i of row r at off + r * stride + i * n); coefs has one row per
// token. One invocation per element d of a row, for every stream:
//   mode 0 predict: out_i = s_i + sum_j coefs[i * k + j] * s_j
//   mode 1 correct: out_i = s_i + (coefs[i] + 1) * (active - s_{i_active})   (s: the predictions)
//   mode 2 mean:    out = (sum_i s_i) / k   (one vector per row)
// Every stream's element is read before any is written, so out may alias s.

layout(local_size_x_id = 0) in;

const uint kMaxStreams = 8u;

layout(std430, binding = 0) readonly buffer S { float s[]; };
layout(std430, binding = 1) readonly buffer C { float c[]; };
layout(std430, binding = 2) readonly buffer Act { float act[]; };
layout(std430, binding = 3) writeonly buffer Out { float o[]; };

layout(push_constant) uniform Params {
  uint n;
  uint k;
  uint rows;
  uint mode;
  uint i_active;
  uint s_off, s_stride;  // in elements
  uint c_off, c_stride;
  uint a_off, a_stride;
  uint o_off, o_stride;
} p;

void main() {
  const uint d = gl_GlobalInvocationID.x;
  if (d >= p.n) return;
  for (uint r = gl_WorkGroupID.y; r < p.rows; r += gl_NumWorkGroups.y) {
    float v[kMaxStreams];
    const uint sb = p.s_off + r * p.s_stride + d;
    for (uint i = 0u; i < p.k; ++i) v[i] = s[sb + i * p.n];
    const uint cb = p.c_off + r * p.c_stride;
    const uint ob = p.o_off + r * p.o_stride + d;
    if (p.mode == 0u) {
      for (uint i = 0u; i < p.k; ++i) {
        float acc = 0.0;
        for (uint j = 0u; j < p.k; ++j) acc += c[cb + i * p.k + j] * v[j];
        o[ob + i * p.n] = v[i] + acc;
      }
    } else if (p.mode == 1u) {
      const float innovation = act[p.a_off + r * p.a_stride + d] - v[p.i_active];
      for (uint i = 0u; i < p.k; ++i) o[ob + i * p.n] = v[i] + (c[cb + i] + 1.0) * innovation;
    } else {
      float acc = 0.0;
      for (uint i = 0u; i < p.k; ++i) acc += v[i];
      o[ob] = acc / float(p.k);
    }
  }
}
