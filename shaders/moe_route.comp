#version 450
// Mixture-of-experts routing, one workgroup of 64 invocations per token (each holds up to 8 of the
// token's router logits in registers): softmax over the n_expert logits, the n_used most probable
// experts by repeated maxima (the higher probability wins, on ties the lower index, as ggml's
// top-k MoE kernels), their probabilities as weights, renormalised to sum 1 when p.norm (the sum
// clamped below at 2^-14 as llama.cpp does). p.top_k_first (gpt-oss): the n_used largest logits,
// and a softmax over those alone as their weights. engine/cpu/moe_route.cpp is the same on the
// host. p.scaled (Gemma 4's ffn_down_exps.scale): each weight is then multiplied by its expert's
// output scale (linear in the expert's output, so it joins the weight). p.sigmoid (Llama 4): the
// n_used largest logits, each weighted by its sigmoid. p.sigmoid_scores (DeepSeek V3, Nemotron-H
// MoE): scores sigmoid(logit), the n_used best of score + bias[e] (p.biased) chosen and weighted by
// their unbiased scores. At most 512 experts, 64 of them per token.
//
// Each maximum is a subgroup reduction and one shared-memory step across the workgroup's
// subgroups (one barrier a round), instead of one invocation's serial scan of n_used x n_expert
// probabilities (1,024 for Qwen3-30B-A3B's 128 experts, 8 used). On an H200 a shared-memory tree
// (seven barriers a round) took 17 us a Qwen3 layer.

#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable

layout(local_size_x_id = 0) in;  // 64: kPer candidates each cover the 512 experts

layout(std430, binding = 0) readonly buffer Logits { float logits[]; };
layout(std430, binding = 1) writeonly buffer Ids { uint ids[]; };
layout(std430, binding = 2) writeonly buffer Weights { float weights[]; };
layout(std430, binding = 3) readonly buffer Scales { float scales[]; };  // read when p.scaled
layout(std430, binding = 4) readonly buffer Bias { float bias[]; };      // read when p.biased

layout(push_constant) uniform Params {
  uint n_expert;
  uint n_used;
  uint n_tokens;
  uint norm;
  uint top_k_first;
  uint scaled;
  float weight_scale;  // every weight times this, last (Granite's residual scale)
  uint sigmoid;
  uint sigmoid_scores;
  uint biased;
} p;

const uint kPer = 8u;
const uint kNone = 0xFFFFFFFFu;
const uint kMaxUsed = 64u;  // ops::kMoeMaxUsed

// Per subgroup, double-buffered by round parity: a subgroup writing round k + 2's slot has passed
// round k + 1's barrier, which every invocation reaches only after reading round k's.
shared float red_v[2 * gl_WorkGroupSize.x];
shared uint red_i[2 * gl_WorkGroupSize.x];
// The selected experts and their weights, kept by invocation 0 for the weights' last steps.
shared float sel_w[kMaxUsed];
shared uint sel_id[kMaxUsed];

// Whether candidate a beats candidate b: a higher value, on equal values the lower index; any
// expert beats kNone (no candidate). Values are never NaN here (see rank_value).
bool beats(float av, uint ai, float bv, uint bi) {
  if (ai == kNone) return false;
  if (bi == kNone) return true;
  return av > bv || (av == bv && ai < bi);
}

// NaN probabilities rank below every number (an all-NaN row still picks distinct experts).
float rank_value(float v) { return isnan(v) ? -1.0 / 0.0 : v; }

// The workgroup's best (value, index) of the invocations' candidates, in round `slot`'s buffers.
void workgroup_best(inout float v, inout uint i, uint slot) {
  const float m = subgroupMax(i == kNone ? -1.0 / 0.0 : v);
  const uint mi = subgroupMin(i != kNone && v == m ? i : kNone);
  const uint at = slot * gl_WorkGroupSize.x + gl_SubgroupID;
  if (subgroupElect()) {
    red_v[at] = m;
    red_i[at] = mi;
  }
  barrier();
  v = 0.0;
  i = kNone;
  for (uint sg = 0u; sg < gl_NumSubgroups; ++sg) {
    const uint from = slot * gl_WorkGroupSize.x + sg;
    if (beats(red_v[from], red_i[from], v, i)) {
      v = red_v[from];
      i = red_i[from];
    }
  }
}

float workgroup_max(float v, uint slot) {
  const float m = subgroupMax(v);
  if (subgroupElect()) red_v[slot * gl_WorkGroupSize.x + gl_SubgroupID] = m;
  barrier();
  float r = -1.0 / 0.0;
  for (uint sg = 0u; sg < gl_NumSubgroups; ++sg)
    r = max(r, red_v[slot * gl_WorkGroupSize.x + sg]);
  return r;
}

float workgroup_sum(float v, uint slot) {
  const float m = subgroupAdd(v);
  if (subgroupElect()) red_v[slot * gl_WorkGroupSize.x + gl_SubgroupID] = m;
  barrier();
  float r = 0.0;
  for (uint sg = 0u; sg < gl_NumSubgroups; ++sg) r += red_v[slot * gl_WorkGroupSize.x + sg];
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
  mx = workgroup_max(mx, 0u);
  float s = 0.0;
  for (uint j = 0u; j < kPer; ++j)
    if (tid + j * wg < p.n_expert) s += exp(z[j] - mx);
  const float inv = 1.0 / workgroup_sum(s, 1u);
  float pv[kPer];
  for (uint j = 0u; j < kPer; ++j) {
    const uint e = tid + j * wg;
    if (p.sigmoid_scores != 0u) {
      // Selection on the biased score; its weight is recomputed unbiased below.
      const float sc = 1.0 / (1.0 + exp(-z[j]));
      pv[j] = rank_value(p.biased != 0u && e < p.n_expert ? sc + bias[e] : sc);
    } else {
      pv[j] = rank_value(p.top_k_first != 0u || p.sigmoid != 0u ? z[j] : exp(z[j] - mx) * inv);
    }
  }

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
    // Slots 0 and 1 held the maximum and the sum: the rounds use them by parity from here on,
    // one barrier after the sum's (see red_v).
    workgroup_best(bv, bi, k & 1u);
    const uint best = bi;
    const float best_p = bv;
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
  if (p.sigmoid_scores != 0u) {
    total = 0.0;
    for (uint k = 0u; k < n; ++k) {
      sel_w[k] = 1.0 / (1.0 + exp(-logits[base + sel_id[k]]));
      total += sel_w[k];
    }
  }
  if (p.sigmoid != 0u) {
    total = 0.0;
    for (uint k = 0u; k < n; ++k) {
      sel_w[k] = 1.0 / (1.0 + exp(-sel_w[k]));
      total += sel_w[k];
    }
  }
  const float d = p.norm != 0u ? max(total, 6.103515625e-5) : 1.0;
  for (uint k = 0u; k < n; ++k) {
    float w = p.norm != 0u ? sel_w[k] / d : sel_w[k];
    if (p.scaled != 0u) w *= scales[sel_id[k]];
    w *= p.weight_scale;
    ids[t * n + k] = sel_id[k];
    weights[t * n + k] = w;
  }
}
