#version 450
// Adds a bias vector to every row: x[r * stride + i] += bias[i] for i < n, r < n_rows.
// (The projections' QKV biases of Qwen 2; the matmul kernels write y = W x, this adds b.)
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Bias { float bias[]; };
layout(push_constant) uniform Params {
  uint n;
  uint n_rows;
  uint stride;
  uint x_off;
} p;
void main() {
  const uint i = gl_GlobalInvocationID.x;
  const uint r = gl_GlobalInvocationID.y + gl_GlobalInvocationID.z * gl_NumWorkGroups.y;
  if (i < p.n && r < p.n_rows) x[p.x_off + r * p.stride + i] += bias[i];
}
