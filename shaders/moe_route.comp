#version 450
// Mixture-of-experts routing, one invocation per token: softmax over the token's n_expert router
// logits, the n_used most probable experts by repeated maxima (a strict > keeps the lower index
// on ties, as ggml's top-k MoE kernels), their probabilities as weights, renormalised to sum 1
// when p.norm (the sum clamped below at 2^-14 as llama.cpp does). p.top_k_first (gpt-oss): the
// n_used largest logits, and a softmax over those alone as their weights. engine/cpu/moe_route.cpp
// is the same on the host. p.scaled (Gemma 4's ffn_down_exps.scale): each weight is then
// multiplied by its expert's output scale (linear in the expert's output, so it joins the
// weight). At most 256 experts (the taken-bits below).

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Logits { float logits[]; };
layout(std430, binding = 1) buffer Ids { uint ids[]; };  // read back when p.scaled
layout(std430, binding = 2) buffer Weights { float weights[]; };
layout(std430, binding = 3) readonly buffer Scales { float scales[]; };  // read when p.scaled

layout(push_constant) uniform Params {
  uint n_expert;
  uint n_used;
  uint n_tokens;
  uint norm;
  uint top_k_first;
  uint scaled;
} p;

void main() {
  const uint t = gl_GlobalInvocationID.x;
  if (t >= p.n_tokens) return;
  const uint base = t * p.n_expert;
  float mx = -1.0 / 0.0;
  for (uint e = 0u; e < p.n_expert; ++e) mx = max(mx, logits[base + e]);
  float sum = 0.0;
  for (uint e = 0u; e < p.n_expert; ++e) sum += exp(logits[base + e] - mx);
  const float inv = 1.0 / sum;
  uint taken[8] = uint[8](0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u);
  float total = 0.0;
  for (uint k = 0u; k < p.n_used; ++k) {
    uint best = p.n_expert;
    float best_p = 0.0;
    for (uint e = 0u; e < p.n_expert; ++e) {
      if ((taken[e >> 5u] & (1u << (e & 31u))) != 0u) continue;
      const float pe = p.top_k_first != 0u ? logits[base + e] : exp(logits[base + e] - mx) * inv;
      if (best == p.n_expert || pe > best_p) {
        best = e;
        best_p = pe;
      }
    }
    taken[best >> 5u] |= 1u << (best & 31u);
    ids[t * p.n_used + k] = best;
    weights[t * p.n_used + k] = best_p;
    total += best_p;
  }
  if (p.top_k_first != 0u) {
    const float top = weights[t * p.n_used];  // the largest selected logit
    total = 0.0;
    for (uint k = 0u; k < p.n_used; ++k) {
      const float e = exp(weights[t * p.n_used + k] - top);
      weights[t * p.n_used + k] = e;
      total += e;
    }
    for (uint k = 0u; k < p.n_used; ++k) weights[t * p.n_used + k] /= total;
  }
  if (p.norm != 0u) {
    const float d = max(total, 6.103515625e-5);
    for (uint k = 0u; k < p.n_used; ++k) weights[t * p.n_used + k] /= d;
  }
  if (p.scaled != 0u) {
    for (uint k = 0u; k < p.n_used; ++k)
      weights[t * p.n_used + k] *= scales[ids[t * p.n_used + k]];
  }
}
