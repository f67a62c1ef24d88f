#version 450
// Repacks a weight tensor in place into the device layout of engine/vulkan/weight_layout.h:
// each group of 8 blocks of BLOCK_BYTES (only 2-byte aligned in the file) becomes the 8 blocks
// without their 2-byte scale at byte SCALE_OFF, then the 8 scales, so the kernels read every
// field with aligned vector loads. One workgroup per group: it reads its 8 blocks whole before
// writing, and groups do not overlap, so the repack can run in place.
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint BLOCK_BYTES = 210u;  // at most 210 (the shared array below)
layout(constant_id = 1) const uint SCALE_OFF = 208u;

layout(std430, binding = 0) buffer Words { uint w[]; };
layout(push_constant) uniform Params { uint n_groups; } p;

shared uint group_words[420];

uint group_byte(uint b) { return (group_words[b >> 2] >> ((b & 3u) << 3)) & 0xFFu; }

// Byte o of the repacked group comes from this byte of the file's 8 blocks.
uint source_byte(uint o) {
  const uint body = BLOCK_BYTES - 2u;
  if (o < 8u * body) {
    const uint j = o / body, at = o % body;
    return j * BLOCK_BYTES + (at < SCALE_OFF ? at : at + 2u);
  }
  const uint j = (o - 8u * body) >> 1;
  return j * BLOCK_BYTES + SCALE_OFF + (o & 1u);
}

void main() {
  const uint g = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (g >= p.n_groups) return;  // whole workgroup: no barrier is skipped by part of it
  const uint words = 2u * BLOCK_BYTES;  // 8 blocks of 4-byte words
  const uint base = g * words;
  for (uint i = gl_LocalInvocationID.x; i < words; i += gl_WorkGroupSize.x)
    group_words[i] = w[base + i];
  barrier();
  for (uint i = gl_LocalInvocationID.x; i < words; i += gl_WorkGroupSize.x) {
    uint v = 0u;
    for (uint k = 0u; k < 4u; ++k) v |= group_byte(source_byte(4u * i + k)) << (8u * k);
    w[base + i] = v;
  }
}
