#version 450
// Gated FFN activation: out[r][i] = act(gate[r][i]) * up[r][i] for rows of n elements, with
// strides so gate and up can be the two halves of one fused gate|up projection.
//   act 0: SiLU  x / (1 + e^-x)                        (SwiGLU: llama, qwen, mistral, phi3)
//   act 1: GELU, tanh approximation as ggml computes it (GeGLU: gemma)

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Gate { float gate[]; };
layout(std430, binding = 1) readonly buffer Up { float up[]; };
layout(std430, binding = 2) writeonly buffer Out { float outv[]; };

layout(push_constant) uniform Params {
  uint n;  // elements per row
  uint n_rows;
  uint act;
  uint gate_off, gate_stride;  // elements
  uint up_off, up_stride;
  uint out_off, out_stride;
} p;

float gelu_tanh(float x) {
  const float k = 0.7978845608028654;  // sqrt(2 / pi)
  const float u = clamp(k * x * (1.0 + 0.044715 * x * x), -15.0, 15.0);
  return 0.5 * x * (1.0 + tanh(u));
}

void main() {
  const uint i = gl_GlobalInvocationID.x;
  const uint r = gl_WorkGroupID.y + gl_WorkGroupID.z * gl_NumWorkGroups.y;
  if (i >= p.n || r >= p.n_rows) return;
  const float g = gate[p.gate_off + r * p.gate_stride + i];
  const float act = p.act == 0u ? g / (1.0 + exp(-g)) : gelu_tanh(g);
  outv[p.out_off + r * p.out_stride + i] = act * up[p.up_off + r * p.up_stride + i];
}
