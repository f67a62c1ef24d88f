#version 450
// Mixture-of-experts routing, one workgroup of 64 invocations per token (each holds up to 4 of the
// token's router logits in registers): softmax over the n_expert logits, the n_used most probable
// experts by repeated maxima (the higher probability wins, on ties the lower index, as ggml's
// top-k MoE kernels), their probabilities as weights, renormalised to sum 1 when p.norm (the sum
// clamped below at 2^-14 as llama.cpp does). p.top_k_first (gpt-oss): the n_used largest logits,
// and a softmax over those alone as their weights. engine/cpu/moe_route.cpp is the same on the
// host. p.scaled (Gemma 4's ffn_down_exps.scale): each weight is then multiplied by its expert's
// output scale (linear in the expert's output, so it joins the weight). At most 256 experts, 64
// of them per token.
//
// Each maximum is a shared-memory tree over the workgroup, instead of one invocation's serial
// scan of n_used x n_expert probabilities (1,024 for Qwen3-30B-A3B's 128 experts, 8 used).

layout(local_size_x_id = 0) in;  // 64: kPer candidates each cover the 256 experts

layout(std430, binding = 0) readonly buffer Logits { float logits[]; };
layout(std430, binding = 1) writeonly buffer Ids { uint ids[]; };
layout(std430, binding = 2) writeonly buffer Weights { float weights[]; };
layout(std430, binding = 3) readonly buffer Scales { float scales[]; };  // read when p.scaled

layout(push_constant) uniform Params {
  uint n_expert;
  uint n_used;
  uint n_tokens;
  uint norm;
  uint top_k_first;
  uint scaled;
} p;

const uint kPer = 4u;
const uint kNone = 0xFFFFFFFFu;
const uint kMaxUsed = 64u;  // ops::kMoeMaxUsed

shared float red_v[gl_WorkGroupSize.x];
shared uint red_i[gl_WorkGroupSize.x];
// The selected experts and their weights, kept by invocation 0 for the weights' last steps.
shared float sel_w[kMaxUsed];
shared uint sel_id[kMaxUsed];

// Whether candidate a beats candidate b: a higher value, on equal values the lower index; a
// number beats NaN, and any expert beats kNone (no candidate).
bool beats(float av, uint ai, float bv, uint bi) {
  if (ai == kNone) return false;
  if (bi == kNone) return true;
  if (isnan(bv)) return !isnan(av) || ai < bi;
  if (isnan(av)) return false;
  return av > bv || (av == bv && ai < bi);
}

float workgroup_max(float v) {
  const uint tid = gl_LocalInvocationID.x;
  red_v[tid] = v;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1u) {
    if (tid < s) red_v[tid] = max(red_v[tid], red_v[tid + s]);
    barrier();
  }
  const float r = red_v[0];
  barrier();
  return r;
}

float workgroup_sum(float v) {
  const uint tid = gl_LocalInvocationID.x;
  red_v[tid] = v;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1u) {
    if (tid < s) red_v[tid] += red_v[tid + s];
    barrier();
  }
  const float r = red_v[0];
  barrier();
  return r;
}

void main() {
  const uint t = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (t >= p.n_tokens) return;  // the whole workgroup
  const uint tid = gl_LocalInvocationID.x;
  const uint wg = gl_WorkGroupSize.x;
  const uint base = t * p.n_expert;

  float z[kPer];
  float mx = -1.0 / 0.0;
  for (uint j = 0u; j < kPer; ++j) {
    const uint e = tid + j * wg;
    z[j] = e < p.n_expert ? logits[base + e] : 0.0;
    if (e < p.n_expert) mx = max(mx, z[j]);
  }
  mx = workgroup_max(mx);
  float s = 0.0;
  for (uint j = 0u; j < kPer; ++j)
    if (tid + j * wg < p.n_expert) s += exp(z[j] - mx);
  const float inv = 1.0 / workgroup_sum(s);
  float pv[kPer];
  for (uint j = 0u; j < kPer; ++j) pv[j] = p.top_k_first != 0u ? z[j] : exp(z[j] - mx) * inv;

  uint taken = 0u;  // bit j: expert tid + j * wg is selected
  float total = 0.0;
  for (uint k = 0u; k < p.n_used; ++k) {
    float bv = 0.0;
    uint bi = kNone;
    for (uint j = 0u; j < kPer; ++j) {
      const uint e = tid + j * wg;
      if (e < p.n_expert && (taken & (1u << j)) == 0u && beats(pv[j], e, bv, bi)) {
        bv = pv[j];
        bi = e;
      }
    }
    red_v[tid] = bv;
    red_i[tid] = bi;
    barrier();
    for (uint st = wg / 2u; st > 0u; st >>= 1u) {
      if (tid < st && beats(red_v[tid + st], red_i[tid + st], red_v[tid], red_i[tid])) {
        red_v[tid] = red_v[tid + st];
        red_i[tid] = red_i[tid + st];
      }
      barrier();
    }
    const uint best = red_i[0];
    const float best_p = red_v[0];
    barrier();  // red_* is reused by the next round
    if (best % wg == tid) taken |= 1u << (best / wg);
    if (tid == 0u) {
      sel_id[k] = best;
      sel_w[k] = best_p;
    }
    total += best_p;
  }
  if (tid != 0u) return;
  const uint n = p.n_used;
  if (p.top_k_first != 0u) {
    const float top = sel_w[0];  // the largest selected logit
    total = 0.0;
    for (uint k = 0u; k < n; ++k) {
      sel_w[k] = exp(sel_w[k] - top);
      total += sel_w[k];
    }
    for (uint k = 0u; k < n; ++k) sel_w[k] /= total;
  }
  const float d = p.norm != 0u ? max(total, 6.103515625e-5) : 1.0;
  for (uint k = 0u; k < n; ++k) {
    float w = p.norm != 0u ? sel_w[k] / d : sel_w[k];
    if (p.scaled != 0u) w *= scales[sel_id[k]];
    ids[t * n + k] = sel_id[k];
    weights[t * n + k] = w;
  }
}
