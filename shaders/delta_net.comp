#version 450
// Qwen3.5's gated delta rule (runtime::DeltaNetSpec, the CPU's engine/cpu/delta_net.cpp), the
// recurrent form: one workgroup per (value head, sequence) walks the sequence's tokens in order;
// invocation j owns row j of the head's state (S[.][j], head_dim floats, in the state buffer:
// no other invocation reads it), so chunked prefill equals token-by-token decoding. Per token the
// query and key (head h % n_k_heads) are staged in shared memory and L2-normalised by every
// invocation alike; then
//   S[.][j] *= exp(g); delta = beta (v[j] - S[.][j] . k); S[.][j] += delta k; out[j] = S[.][j] . q
// with g = softplus(alpha + dt[h]) * a[h], beta = sigmoid(beta), out scaled by 1/sqrt(head_dim).
// (The chunked parallel form for prefill is a later speed step.) Activations are parts of one
// buffer, offsets in floats. Grid: x = value head, y = sequence; workgroup = head_dim.

#define META_BINDING 1
#include "kv_meta.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer In { float act[]; };
layout(std430, binding = 2) readonly buffer Dt { float dt[]; };
layout(std430, binding = 3) readonly buffer A { float a_log[]; };
layout(std430, binding = 4) buffer State { float state[]; };
layout(std430, binding = 5) buffer Out { float outv[]; };

layout(push_constant) uniform Params {
  uint n_tokens;
  uint n_seqs;
  uint n_k_heads;
  uint n_v_heads;
  uint head_dim;
  uint stride;  // floats from one token's row of qkv / alpha / beta to the next
  uint qkv_off;
  uint alpha_off;
  uint beta_off;
  uint out_off;
  uint out_stride;
  uint slot_floats;
  uint state_offset;  // this layer's delta-rule matrices within a slot
  float eps;
} p;

const uint kMaxHead = 256u;  // model::kMaxDeltaNetHeadDim
shared float qs[kMaxHead];
shared float ks[kMaxHead];

float softplus(float x) { return x > 20.0 ? x : log(1.0 + exp(x)); }

void main() {
  const uint h = gl_WorkGroupID.x;
  const uint seq = gl_WorkGroupID.y;
  const uint j = gl_LocalInvocationID.x;
  const uint d = p.head_dim;
  if (h >= p.n_v_heads || seq >= p.n_seqs) return;
  const uint q_len = meta_seq_q_len(p.n_tokens, p.n_seqs, seq);
  const uint t0 = meta_seq_q_start(p.n_tokens, p.n_seqs, seq);
  const bool fresh = meta_seq_kv_len(p.n_tokens, p.n_seqs, seq) == q_len;
  const uint row_j = meta_seq_state(p.n_tokens, p.n_seqs, seq) * p.slot_floats + p.state_offset +
                     (h * d + j) * d;
  const uint kh = h % p.n_k_heads;
  const uint key_dim = p.n_k_heads * d;
  const float fd = float(d);
  if (fresh && j < d)
    for (uint i = 0u; i < d; ++i) state[row_j + i] = 0.0;
  for (uint t = 0u; t < q_len; ++t) {
    const uint row = (t0 + t) * p.stride;
    if (j < d) {
      qs[j] = act[p.qkv_off + row + kh * d + j];
      ks[j] = act[p.qkv_off + row + key_dim + kh * d + j];
    }
    barrier();
    if (j < d) {
      float sq = 0.0, sk = 0.0;
      for (uint i = 0u; i < d; ++i) {
        sq += qs[i] * qs[i];
        sk += ks[i] * ks[i];
      }
      const float scale_q = 1.0 / sqrt(sq / fd + p.eps / fd) / sqrt(fd);
      const float scale_k = 1.0 / sqrt(sk / fd + p.eps / fd) / sqrt(fd);
      const float decay = exp(softplus(act[p.alpha_off + row + h] + dt[h]) * a_log[h]);
      const float beta = 1.0 / (1.0 + exp(-act[p.beta_off + row + h]));
      const float v = act[p.qkv_off + row + 2u * key_dim + h * d + j];
      float s_k = 0.0;
      for (uint i = 0u; i < d; ++i) {
        const float s = state[row_j + i] * decay;
        state[row_j + i] = s;
        s_k += s * ks[i] * scale_k;
      }
      const float delta = (v - s_k) * beta;
      float s_q = 0.0;
      for (uint i = 0u; i < d; ++i) {
        const float s = state[row_j + i] + ks[i] * scale_k * delta;
        state[row_j + i] = s;
        s_q += s * qs[i] * scale_q;
      }
      outv[p.out_off + (t0 + t) * p.out_stride + h * d + j] = s_q / sqrt(fd);
    }
    barrier();
  }
}
