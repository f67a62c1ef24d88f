#version 450
// Element-wise ops over n elements, in place or not (out may alias a):
//   op 0 add:     out = a + b        (residual add)
//   op 1 mul:     out = a * b
//   op 2 scale:   out = a * s
//   op 3 softcap: out = s * tanh(a / s)   (Gemma 2 final-logit soft-capping)
//   op 4 gelu:    out = gelu(a), tanh approximation as ggml computes it (BERT's FFN)
//   op 5 tanh:    out = tanh(s * a)       (a cross-encoder's classification head, s = 1; Gemma
//                                          3n's AltUp router, s = 1 / n_embd)
//   op 6 clamp:   out = clamp(a, s, t)    (Gemma 4's vision tower's clipped linear layers)
// b is read only by ops 0 and 1 (bind any buffer otherwise). Each invocation handles 4 elements.

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer Out { float outv[]; };

layout(push_constant) uniform Params {
  uint n;
  uint op;
  float s;
  uint a_off;  // element offsets
  uint b_off;
  uint out_off;
  float t;
} p;

float tanh_safe(float v) {
  // tanh() of large |v| is NaN on some drivers (exp overflow): clamp first.
  return tanh(clamp(v, -15.0, 15.0));
}

void main() {
  const uint base = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) *
                        gl_WorkGroupSize.x * 4u + gl_LocalInvocationIndex;
  for (uint k = 0u; k < 4u; ++k) {
    const uint i = base + k * gl_WorkGroupSize.x;
    if (i >= p.n) return;
    const float x = a[p.a_off + i];
    float v;
    switch (p.op) {
      case 0u: v = x + b[p.b_off + i]; break;
      case 1u: v = x * b[p.b_off + i]; break;
      case 2u: v = x * p.s; break;
      case 3u: v = p.s * tanh_safe(x / p.s); break;
      case 4u: v = 0.5 * x * (1.0 + tanh_safe(0.7978845608028654 * x * (1.0 + 0.044715 * x * x))); break;
      case 6u: v = clamp(x, p.s, p.t); break;
      default: v = tanh_safe(p.s * x); break;
    }
    outv[p.out_off + i] = v;
  }
}
