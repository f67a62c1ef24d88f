#version 450
// Greedy decoding on the device: for each row of n logits, the index of the largest value (the
// lowest such index on ties; NaN never wins). One workgroup per row; out[row] = index.

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Logits { float logits[]; };
layout(std430, binding = 1) writeonly buffer Out { uint outv[]; };

layout(push_constant) uniform Params {
  uint n;
  uint n_rows;
  uint stride;  // elements between rows
  uint in_off;
  uint out_off;
} p;

shared float best_v[1024];
shared uint best_i[1024];

bool better(float v, uint i, float bv, uint bi) { return v > bv || (v == bv && i < bi); }

void main() {
  const uint row = gl_WorkGroupID.x;
  if (row >= p.n_rows) return;
  const uint t = gl_LocalInvocationIndex;
  const uint nt = gl_WorkGroupSize.x;
  float bv = uintBitsToFloat(0xFF800000u);  // -inf
  uint bi = 0xFFFFFFFFu;
  const uint base = p.in_off + row * p.stride;
  for (uint i = t; i < p.n; i += nt) {
    const float v = logits[base + i];
    if (better(v, i, bv, bi)) {
      bv = v;
      bi = i;
    }
  }
  best_v[t] = bv;
  best_i[t] = bi;
  barrier();
  for (uint s = nt / 2u; s > 0u; s >>= 1) {
    if (t < s && better(best_v[t + s], best_i[t + s], best_v[t], best_i[t])) {
      best_v[t] = best_v[t + s];
      best_i[t] = best_i[t + s];
    }
    barrier();
  }
  if (t == 0u) outv[p.out_off + row] = best_i[0] == 0xFFFFFFFFu ? 0u : best_i[0];
}
