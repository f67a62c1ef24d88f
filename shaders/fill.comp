#version 450
// Fills a float buffer with a constant; the smallest kernel, used to check the runtime itself.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) writeonly buffer Out { float data[]; };
layout(push_constant) uniform Params { uint n; float value; } p;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < p.n) data[i] = p.value;
}
