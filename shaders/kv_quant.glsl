// Reading rows of the paged KV cache in its element type (engine/kv/kv_cache_type.h): f16, q8_0
// or q4_0 (blocks of 32 values of a head row, an f16 scale each; quants first, then the scales as
// f16 pairs). Needs the specialization constants D (head dim) and KV_TYPE (0 f16, 1 q8_0, 2 q4_0;
// quantized rows need D a multiple of 32). The kernels keep staging f16 values: a quantized row
// is expanded to f16 pairs as it is loaded, so everything after the load is the f16 kernel.
// KV_HEAD_DIM (default D): the length of an f16 cache row where a kernel pads D beyond it.
//
// KV_LOADERS(K, kcache, kcache2, kcache_w) defines, for the buffers kcache (uvec4[]), kcache2
// (uvec2[]) and kcache_w (uint[]) bound to the same region:
//   uvec4 K_load8(row, j)  values 8j .. 8j + 7 of row `row` as four f16 pairs
//   uint K_pair(row, j)    values 2j, 2j + 1 as one f16 pair

#ifndef KV_HEAD_DIM
#define KV_HEAD_DIM D
#endif

const uint KV_ROW_WORDS =
    KV_TYPE == 0u ? D / 2u : (KV_TYPE == 1u ? D / 4u : D / 8u) + (D / 32u + 1u) / 2u;
const uint KV_SCALE_WORD = KV_TYPE == 1u ? D / 4u : D / 8u;

// Four int8 quants of a word, or four 4-bit ones (nibbles `first` .. first + 3), as floats.
vec4 kv_q8x4(uint w) {
  const int s = int(w);
  return vec4(bitfieldExtract(s, 0, 8), bitfieldExtract(s, 8, 8), bitfieldExtract(s, 16, 8),
              bitfieldExtract(s, 24, 8));
}
vec4 kv_q4x4(uint w, uint first) {
  const uint s = w >> (4u * first);
  return vec4(uvec4(s, s >> 4, s >> 8, s >> 12) & 0xFu) - 8.0;
}
uvec4 kv_pack8(vec4 a, vec4 b) {
  return uvec4(packHalf2x16(a.xy), packHalf2x16(a.zw), packHalf2x16(b.xy), packHalf2x16(b.zw));
}

// Where a q8_0 row is an even number of words (34 at heads of 128, not 17 at 64), a group's 8
// quants are one aligned 8-byte load (two 4-byte loads read a 32k cache at 35% of f16's rate on
// an H200, bench_attention kvtype).
#define KV_LOADERS(NAME, VEC, VEC2, WORDS)                                                     \
  float NAME##_scale(uint base, uint block) {                                                  \
    return unpackHalf2x16(WORDS[base + KV_SCALE_WORD + block / 2u])[block & 1u];               \
  }                                                                                            \
  uvec4 NAME##_load8(uint row, uint j) {                                                       \
    if (KV_TYPE == 0u) return VEC[row * (KV_HEAD_DIM / 8u) + j];                               \
    const uint base = row * KV_ROW_WORDS;                                                      \
    const float d = NAME##_scale(base, j / 4u);                                                \
    if (KV_TYPE == 1u) {                                                                       \
      const uvec2 q = KV_ROW_WORDS % 2u == 0u ? VEC2[base / 2u + j]                            \
                                              : uvec2(WORDS[base + 2u * j], WORDS[base + 2u * j + 1u]); \
      return kv_pack8(kv_q8x4(q.x) * d, kv_q8x4(q.y) * d);                                     \
    }                                                                                          \
    const uint w = WORDS[base + j];                                                            \
    return kv_pack8(kv_q4x4(w, 0u) * d, kv_q4x4(w, 4u) * d);                                   \
  }                                                                                            \
  uint NAME##_pair(uint row, uint j) {                                                         \
    if (KV_TYPE == 0u) return WORDS[row * (KV_HEAD_DIM / 2u) + j];                               \
    const uint base = row * KV_ROW_WORDS;                                                      \
    const float d = NAME##_scale(base, j / 16u);                                               \
    if (KV_TYPE == 1u) {                                                                       \
      const vec4 v = kv_q8x4(WORDS[base + j / 2u]);                                            \
      return packHalf2x16(((j & 1u) == 0u ? v.xy : v.zw) * d);                                 \
    }                                                                                          \
    const vec4 v = kv_q4x4(WORDS[base + j / 4u], 2u * (j % 4u));                               \
    return packHalf2x16(v.xy * d);                                                             \
  }
