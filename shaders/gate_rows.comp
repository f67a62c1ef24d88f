#version 450
// x *= act(gate) over rows of n (runtime::StepBackend::gate_rows): sigmoid (Qwen3.5's attention
// output gate), SiLU (its DeltaNet's and Mamba-2's gated norm) or ReLU (x and gate the same rows:
// Nemotron-H's relu^2), with a gate per element or one per row (g_step 0). Each invocation reads its gate element before writing x's. Row r of x at x_off + r * x_stride, of the
// gate at g_off + r * g_stride (floats). Grid: x covers a row, y + z * 65535 the rows.

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer G { float g[]; };

layout(push_constant) uniform Params {
  uint n;
  uint rows;
  uint x_off, x_stride;
  uint g_off, g_stride;
  uint act;     // 0: sigmoid, 1: SiLU, 2: ReLU
  uint g_step;  // 1: a gate per element; 0: one per row (a shared expert's gate)
} p;

void main() {
  const uint i = gl_GlobalInvocationID.x;
  const uint r = gl_WorkGroupID.y + gl_WorkGroupID.z * 65535u;
  if (i >= p.n || r >= p.rows) return;
  const float v = g[p.g_off + r * p.g_stride + i * p.g_step];
  const float s = 1.0 / (1.0 + exp(-v));
  x[p.x_off + r * p.x_stride + i] *= p.act == 2u ? max(v, 0.0) : p.act == 1u ? v * s : s;
}
