#version 450
// Streams 16-byte words from one buffer to another: the memory-bandwidth probe behind
// `vkllm bench`'s roofline (a compute copy is what the decode kernels' weight reads resemble).
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer Src { uvec4 src[]; };
layout(std430, binding = 1) writeonly buffer Dst { uvec4 dst[]; };
layout(push_constant) uniform Params { uint n; } p;
void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) dst[i] = src[i];
}
