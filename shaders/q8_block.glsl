// One q8 activation block (record_quantize_q8's layout, see quantize_q8.comp) from 32 floats
// held by one invocation: dx = max|v| / 127, q = roundEven(v / dx), sx = dx * sum(q). Kernels
// that produce activations include this to write them also as q8 for the int8-dot matvec,
// saving the separate quantize dispatch. The q8 output is binding Q8_BINDING (default 4).

#ifndef Q8_BINDING
#define Q8_BINDING 4
#endif
layout(std430, binding = Q8_BINDING) writeonly buffer Q8S { uvec4 q8_qs[]; };
layout(std430, binding = Q8_BINDING) writeonly buffer Q8D { vec2 q8_ds[]; };

uint q8_pack4(vec4 q) {
  const ivec4 i = ivec4(q) & 255;
  return uint(i.x) | (uint(i.y) << 8) | (uint(i.z) << 16) | (uint(i.w) << 24);
}

// Block `b` of all n_blocks blocks (vector after vector); v are its 32 values.
void q8_store_block(uint b, uint n_blocks, vec4 v[8]) {
  float amax = 0.0;
  [[unroll]] for (uint i = 0u; i < 8u; ++i) {
    const vec4 a = abs(v[i]);
    amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
  }
  const float d = amax / 127.0;
  const float id = amax > 0.0 ? 127.0 / amax : 0.0;
  uint w[8];
  float sum = 0.0;
  [[unroll]] for (uint i = 0u; i < 8u; ++i) {
    const vec4 q = clamp(roundEven(v[i] * id), -127.0, 127.0);
    sum += (q.x + q.y) + (q.z + q.w);
    w[i] = q8_pack4(q);
  }
  q8_qs[2u * b] = uvec4(w[0], w[1], w[2], w[3]);
  q8_qs[2u * b + 1u] = uvec4(w[4], w[5], w[6], w[7]);
  q8_ds[n_blocks * 4u + b] = vec2(d, d * sum);  // the pairs follow n_blocks * 32 bytes
}
