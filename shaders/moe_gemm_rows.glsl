// How the tiled GEMMs (matmul.comp, matmul_coopmat.comp) find their rows. Plain: token m's
// activations are row m of x and its outputs row m of y, W starts at w_off. With MOE defined
// (the grouped expert products of a mixture-of-experts FFN, ggml's MUL_MAT_ID at prefill sizes):
// grid z is the expert e, whose pairs shaders/moe_group.comp listed in binding 4
// (engine/vulkan/moe_ops.h: counts, offsets, then the pair ids q = t * n_used + k sorted by
// expert); the tile's m-th row is the m-th pair q of e: x row q (bit 3 of flags) or its token
// q / n_used, y row q, weights e's. Every weight tile is so read once per tile of pairs, not once
// per pair. A workgroup past its expert's pairs exits at once (the grid is sized for the worst
// case, every token on one expert).
// Included after the push constants (p: w_off, flags, and with MOE expert_bytes, n_used); the
// kernel calls moe_tile_begin(m0, BM) before its first barrier and returns if it is false.

#ifdef MOE
layout(std430, binding = 4) readonly buffer MoeGroups { uint moe_groups[]; };
const uint MOE_MAX_EXPERTS = 512u;  // kMoeMaxExperts: where the offsets and the list start
shared uint moe_pairs[BM];          // the tile's pair ids
uint moe_n_cols;                    // pairs of this workgroup's expert
uint moe_w_off;                     // its weights
uint moe_m0;

bool moe_tile_begin(uint m0, uint bm) {
  const uint e = gl_WorkGroupID.z;
  moe_n_cols = moe_groups[e];
  if (m0 >= moe_n_cols) return false;  // uniform: the whole workgroup leaves
  moe_w_off = p.w_off + e * p.expert_bytes;
  moe_m0 = m0;
  const uint first = 2u * MOE_MAX_EXPERTS + moe_groups[MOE_MAX_EXPERTS + e] + m0;
  for (uint i = gl_LocalInvocationID.x; i < bm; i += gl_WorkGroupSize.x)
    moe_pairs[i] = m0 + i < moe_n_cols ? moe_groups[first + i] : 0u;
  return true;
}

#define N_COLS moe_n_cols
#define W_OFF moe_w_off
#define Y_ROW(m) moe_pairs[(m) - moe_m0]
#define X_ROW(m) ((p.flags & 8u) != 0u ? Y_ROW(m) : Y_ROW(m) / p.n_used)
#else
bool moe_tile_begin(uint m0, uint bm) { return true; }
#define N_COLS p.n_cols
#define W_OFF p.w_off
#define X_ROW(m) (m)
#define Y_ROW(m) (m)
#endif
