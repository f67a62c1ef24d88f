#version 450
// Qwen3.5's gated delta rule (runtime::DeltaNetSpec, the CPU's engine/cpu/delta_net.cpp), the
// recurrent form. A head's state S is head_dim x head_dim; column j (S[.][j], contiguous in the
// state buffer) only ever meets v[j] and out[j], so columns are independent: one subgroup owns one
// column of one (value head, sequence) and keeps it in registers (ROWS values a lane, row
// i = lane + r * subgroup size) while it walks the sequence's tokens in order — chunked prefill
// equals token-by-token decoding, and the state is read and written once per step, not per token.
// Per token, with the query and key (head h % n_k_heads; p.grouped, Qwen3-Next: h / (n_v / n_k))
// L2-normalised:
//   S[.][j] *= exp(g); delta = beta (v[j] - S[.][j] . k); S[.][j] += delta k; out[j] = S[.][j] . q
// with g = softplus(alpha + dt[h]) * a[h], beta = sigmoid(beta), out scaled by 1/sqrt(head_dim);
// every dot product is one subgroupAdd, so no barrier is needed at all. Activations are parts of
// one buffer, offsets in floats. Grid: x = value head, y = sequence, z = column blocks of the
// workgroup's subgroup count. Sequences of chunk_min tokens or more are left to the chunked form
// (shaders/delta_net_chunked.comp), which the host records beside this one, unless the step
// keeps their states after each token (kv_meta.glsl's seq_capture: a speculative step's
// sequence), which this kernel writes as it walks.

#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_EXT_control_flow_attributes : enable

#define META_BINDING 1
#include "kv_meta.glsl"

layout(local_size_x_id = 0) in;
// ceil(head_dim / subgroup size): the host fixes the subgroup size the pipeline runs with.
layout(constant_id = 1) const uint ROWS = 4;

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
  uint grouped;  // Qwen3-Next: key head h / r, alpha/beta at (h / r) * 2r + h % r
  uint chunk_min;  // sequences of at least this many tokens are delta_net_chunked.comp's
} p;

float softplus(float x) { return x > 20.0 ? x : log(1.0 + exp(x)); }

void main() {
  const uint h = gl_WorkGroupID.x;
  const uint seq = gl_WorkGroupID.y;
  const uint lanes = gl_SubgroupSize;
  const uint lane = gl_SubgroupInvocationID;
  const uint j = gl_WorkGroupID.z * gl_NumSubgroups + gl_SubgroupID;
  const uint d = p.head_dim;
  // Whole subgroups leave together; a column past the head still joins no reduction of another.
  if (h >= p.n_v_heads || seq >= p.n_seqs || j >= d) return;
  const uint q_len = meta_seq_q_len(p.n_tokens, p.n_seqs, seq);
  const uint capture = meta_seq_capture(p.n_tokens, p.n_seqs, seq);
  if (q_len >= p.chunk_min && capture == 0u) return;
  const uint t0 = meta_seq_q_start(p.n_tokens, p.n_seqs, seq);
  const bool fresh = meta_seq_kv_len(p.n_tokens, p.n_seqs, seq) == q_len;
  const uint col = meta_seq_state(p.n_tokens, p.n_seqs, seq) * p.slot_floats + p.state_offset +
                   (h * d + j) * d;
  const uint ratio = p.n_v_heads / p.n_k_heads;
  const uint kh = p.grouped != 0u ? h / ratio : h % p.n_k_heads;
  const uint ab = p.grouped != 0u ? (h / ratio) * 2u * ratio + h % ratio : h;
  const uint key_dim = p.n_k_heads * d;
  const float fd = float(d);

  float s[ROWS];
  [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
    const uint i = lane + r * lanes;
    s[r] = (fresh || i >= d) ? 0.0 : state[col + i];
  }
  // Token t + 1's inputs are loaded while token t is computed, so the walk's chain of
  // dependent steps holds no memory latency but the first token's.
  float qn[ROWS], kn[ROWS], alpha_n = 0.0, beta_n = 0.0, v_n = 0.0;
  if (q_len > 0u) {
    const uint row = t0 * p.stride;
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
      const uint i = lane + r * lanes;
      qn[r] = i < d ? act[p.qkv_off + row + kh * d + i] : 0.0;
      kn[r] = i < d ? act[p.qkv_off + row + key_dim + kh * d + i] : 0.0;
    }
    alpha_n = act[p.alpha_off + row + ab];
    beta_n = act[p.beta_off + row + ab];
    v_n = act[p.qkv_off + row + 2u * key_dim + h * d + j];
  }
  const float dt_h = dt[h], a_h = a_log[h];
  for (uint t = 0u; t < q_len; ++t) {
    float q[ROWS], k[ROWS];
    float sq = 0.0, sk = 0.0;
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
      q[r] = qn[r];
      k[r] = kn[r];
      sq += q[r] * q[r];
      sk += k[r] * k[r];
    }
    const float alpha_t = alpha_n, beta_t = beta_n, v = v_n;
    if (t + 1u < q_len) {
      const uint row = (t0 + t + 1u) * p.stride;
      [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
        const uint i = lane + r * lanes;
        qn[r] = i < d ? act[p.qkv_off + row + kh * d + i] : 0.0;
        kn[r] = i < d ? act[p.qkv_off + row + key_dim + kh * d + i] : 0.0;
      }
      alpha_n = act[p.alpha_off + row + ab];
      beta_n = act[p.beta_off + row + ab];
      v_n = act[p.qkv_off + row + 2u * key_dim + h * d + j];
    }
    sq = subgroupAdd(sq);
    sk = subgroupAdd(sk);
    const float scale_q = 1.0 / sqrt(sq / fd + p.eps / fd) / sqrt(fd);
    const float scale_k = 1.0 / sqrt(sk / fd + p.eps / fd) / sqrt(fd);
    const float decay = exp(softplus(alpha_t + dt_h) * a_h);
    const float beta = 1.0 / (1.0 + exp(-beta_t));
    float s_k = 0.0;
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
      s[r] *= decay;
      s_k += s[r] * k[r] * scale_k;
    }
    const float delta = (v - subgroupAdd(s_k)) * beta;
    float s_q = 0.0;
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
      s[r] += k[r] * scale_k * delta;
      s_q += s[r] * q[r] * scale_q;
    }
    s_q = subgroupAdd(s_q);
    if (lane == 0u) outv[p.out_off + (t0 + t) * p.out_stride + h * d + j] = s_q / sqrt(fd);
    if (capture != 0u && t + 1u < q_len) {
      const uint kept = (capture + t) * p.slot_floats + p.state_offset + (h * d + j) * d;
      [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
        const uint i = lane + r * lanes;
        if (i < d) state[kept + i] = s[r];
      }
    }
  }
  [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
    const uint i = lane + r * lanes;
    if (i < d) state[col + i] = s[r];
  }
}
