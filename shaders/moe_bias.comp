#version 450
// gpt-oss's expert biases on the mixture-of-experts path (engine/runtime/vulkan_backend_moe.cpp),
// bias[e * rows + r] being expert e's bias for output row r:
//   p.combine 0: y[i * rows + r] += bias[ids[i] * rows + r] for each (token, rank) pair i < n_items
//                (the gate and up products, one row of `rows` per pair);
//   p.combine 1: y[y_off + t * y_stride + r] += sum_k weights[t * n_used + k] *
//                bias[ids[t * n_used + k] * rows + r] for each token t < n_items (the down
//                products' biases, weighted like the experts' outputs moe_matvec summed there).
// Grid: x covers the rows, y the items.

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer Y { float y[]; };
layout(std430, binding = 1) readonly buffer Bias { float bias[]; };
layout(std430, binding = 2) readonly buffer Ids { uint ids[]; };
layout(std430, binding = 3) readonly buffer Weights { float weights[]; };

layout(push_constant) uniform Params {
  uint rows;
  uint n_items;
  uint n_used;
  uint combine;
  uint y_off, y_stride;
} p;

void main() {
  const uint r = gl_GlobalInvocationID.x;
  const uint i = gl_WorkGroupID.y + gl_WorkGroupID.z * gl_NumWorkGroups.y;
  if (r >= p.rows || i >= p.n_items) return;
  if (p.combine == 0u) {
    y[i * p.rows + r] += bias[ids[i] * p.rows + r];
    return;
  }
  float acc = 0.0;
  for (uint k = 0u; k < p.n_used; ++k) {
    const uint pair = i * p.n_used + k;
    acc += weights[pair] * bias[ids[pair] * p.rows + r];
  }
  y[p.y_off + i * p.y_stride + r] += acc;
}
