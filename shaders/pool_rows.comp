#version 450
// Pools each sequence's token rows of a step into one row (embedding models):
//   mode 0 mean: the average of the sequence's rows
//   mode 1 first: its first token's row (CLS pooling, and the input of a rank head)
//   mode 2 last: its last token's row
// Sequences are the step's batch (kv_meta.glsl: seq_q_start / seq_q_len). Grid: x covers the
// row's elements, y = sequence.

#define META_BINDING 1
#include "kv_meta.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 2) writeonly buffer Out { float outv[]; };

layout(push_constant) uniform Params {
  uint n;  // row length
  uint n_tokens;
  uint n_seqs;
  uint mode;
} p;

void main() {
  const uint i = gl_GlobalInvocationID.x;
  const uint seq = gl_WorkGroupID.y;
  if (i >= p.n || seq >= p.n_seqs) return;
  const uint start = meta_seq_q_start(p.n_tokens, p.n_seqs, seq);
  const uint len = meta_seq_q_len(p.n_tokens, p.n_seqs, seq);
  float v;
  if (p.mode == 0u) {
    float sum = 0.0;
    for (uint t = 0u; t < len; ++t) sum += x[(start + t) * p.n + i];
    v = sum / float(max(len, 1u));
  } else {
    v = x[(start + (p.mode == 1u ? 0u : len - 1u)) * p.n + i];
  }
  outv[seq * p.n + i] = v;
}
