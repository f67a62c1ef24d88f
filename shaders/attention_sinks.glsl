// Normalising a row of attention output: O (summed against exp(s - m)) divided by the softmax sum
// l, or, with SINKS defined (the binding of one logit per query head: gpt-oss's attention sinks),
// by l + e^{sink - m}, computed around the larger of m and the sink so that neither exponent
// overflows (engine/cpu/attention_kernels.h's sink_scaled_inverse). A row that saw no key gives
// zeros either way (m = -inf, l = 0, O = 0).
#ifdef SINKS
layout(std430, binding = SINKS) readonly buffer Sinks { float sinks[]; };

float sink_scaled_inverse(float m, float l, uint head) {
  const float sink = sinks[head];
  const float top = max(m, sink);
  const float keep = exp(m - top);
  return keep / (l * keep + exp(sink - top));
}
vec2 normalise_row(vec2 o, float m, float l, uint head) {
  return o * sink_scaled_inverse(m, l, head);
}
float normalise_row(float o, float m, float l, uint head) {
  return o * sink_scaled_inverse(m, l, head);
}
#else
vec2 normalise_row(vec2 o, float m, float l, uint head) { return l > 0.0 ? o / l : vec2(0.0); }
float normalise_row(float o, float m, float l, uint head) { return l > 0.0 ? o / l : 0.0; }
#endif
