#version 450
// Greedy decoding on the device: for each row of n logits, the index of the largest value (the
// lowest such index on ties; NaN never wins). Large rows (a vocabulary) take two passes so the
// whole GPU reads them:
//   stage 0: workgroup (chunk, row) reduces its chunk of the row to a (value, index) partial;
//   stage 1: workgroup (row) reduces the row's partials and writes out[row];
//   stage 2: workgroup (row) reduces the whole row directly (small rows).

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Logits { float logits[]; };
layout(std430, binding = 1) writeonly buffer Out { uint outv[]; };
layout(std430, binding = 2) buffer Partials { uvec2 partial[]; };  // (float bits, index)

layout(push_constant) uniform Params {
  uint n;
  uint n_rows;
  uint stride;  // elements between rows
  uint stage;
  uint chunk;   // elements per chunk (stage 0)
  uint n_chunks;
} p;

shared float best_v[1024];
shared uint best_i[1024];

bool better(float v, uint i, float bv, uint bi) { return v > bv || (v == bv && i < bi); }

void main() {
  const uint t = gl_LocalInvocationIndex;
  const uint nt = gl_WorkGroupSize.x;
  const uint row = p.stage == 0u ? gl_WorkGroupID.y : gl_WorkGroupID.x;
  if (row >= p.n_rows) return;
  float bv = uintBitsToFloat(0xFF800000u);  // -inf
  uint bi = 0xFFFFFFFFu;
  if (p.stage == 1u) {
    for (uint c = t; c < p.n_chunks; c += nt) {
      const uvec2 e = partial[row * p.n_chunks + c];
      if (better(uintBitsToFloat(e.x), e.y, bv, bi)) {
        bv = uintBitsToFloat(e.x);
        bi = e.y;
      }
    }
  } else {
    const uint begin = p.stage == 0u ? gl_WorkGroupID.x * p.chunk : 0u;
    const uint end = p.stage == 0u ? min(p.n, begin + p.chunk) : p.n;
    const uint base = row * p.stride;
    for (uint i = begin + t; i < end; i += nt) {
      const float v = logits[base + i];
      if (better(v, i, bv, bi)) {
        bv = v;
        bi = i;
      }
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
  if (t == 0u) {
    if (p.stage == 0u)
      partial[row * p.n_chunks + gl_WorkGroupID.x] = uvec2(floatBitsToUint(best_v[0]), best_i[0]);
    else
      outv[row] = best_i[0] == 0xFFFFFFFFu ? 0u : best_i[0];
  }
}
