#version 450
// Rotary position embedding of head rows, in three variants (defines):
//   (none)      rope:     f32 rows -> f32 rows (dst may alias src: the row is staged in shared)
//   PAGED       rope_kv:  f32 K rows -> rotated, written into the paged K cache
//   PAGED NO_ROPE kv_copy: f32 V rows -> paged V cache, unrotated
// The cache rows are f16, or q8_0 / q4_0 (specialization constant KV_TYPE; row layout in
// engine/kv/kv_cache_type.h): a row's blocks of 32 are quantized with GGML's rounding.
// Rows: token t, head h at src[src_off + t * src_stride + h * head_dim]; or, from a split-K
// product's unsummed partials (MatmulKernels::SplitParts), the sum of src_splits such rows
// src_split_stride elements apart, added in the order the reduction pass adds them. Positions come
// from the batch metadata (kv_meta.glsl), so RoPE always uses absolute positions. The f32
// variant may scale its rows by the query temperature of the token's position (temp_scale), and
// copy them unrotated (flags bit 2: Llama 4's NoPE layers).
// Rotation (ggml's rope_ext without YaRN): pair i < n_dims / 2 turns by
//   theta = pos * freq_scale * freq_base^(-2i / n_dims) / freq_factor[i]
// on elements (2i, 2i+1) ("normal", llama GGUF order) or (i, i + n_dims/2) ("neox"); elements
// from n_dims on are copied. Grid: x = heads, y = tokens.
// Head norm (flags bit 5, every variant): each row is RMS-normed first, times the head_dim values
// at binding 5 where flags bit 6 says so (Qwen3's and Gemma's per-head Q/K norms, Gemma 4's plain
// V norm), so the norm costs no dispatch and barrier of its own.

#define META_BINDING 2
#include "kv_meta.glsl"
#include "rope_angle.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint KV_TYPE = 0u;  // paged: 0 f16, 1 q8_0, 2 q4_0

layout(std430, binding = 0) readonly buffer Src {
  float src[];
};
#ifdef PAGED
layout(std430, binding = 1) writeonly buffer Cache {
  uint cache[];
};  // f16 pairs
#else
layout(std430, binding = 1) writeonly buffer Dst {
  float dst[];
};
#endif
layout(std430, binding = 3) readonly buffer Factors {
  float freq_factors[];
};
layout(std430, binding = 4) readonly buffer MropePos {
  uint mrope_pos[];
};  // (t, h, w) a token
layout(std430, binding = 5) readonly buffer NormW {
  float norm_w[];
};

layout(push_constant) uniform Params {
  uint head_dim;
  uint n_dims;  // rotated dimensions (even, <= head_dim)
  uint n_heads;
  uint n_tokens;
  uint n_seqs;
  uint src_off, src_stride;  // elements
  uint dst_off, dst_stride;  // elements (f32 output only)
  float freq_base;
  float freq_scale;
  uint flags;             // bit 0: neox ordering; bit 1: use freq_factors; bit 2: no rotation
  uint cache_heads;       // paged: KV heads per block in the cache
  uint block_size;        // paged: tokens per block
  uint src_splits;        // partials summed into each source row (1: plain rows)
  uint src_split_stride;  // elements between consecutive partials
  float temp_scale;       // f32 output: rows times 1 + temp_scale * ln(floor((pos + temp_offset) /
  uint temp_floor;   // temp_floor) + 1) (attention temperature tuning of queries); temp_scale 0:
  uint temp_offset;  // off
  // flags bit 3 (M-RoPE): pair i's position is the token's mrope_pos component of its section
  // in the repeating sections of these sizes (a fourth: t); bit 4: interleaved (pair_pos).
  // Scalars: a uvec4 would be 16-aligned.
  uint sec0, sec1, sec2, sec3;
  float norm_eps;  // flags bit 5
}
p;

shared float row[512];
shared float norm_part[64];  // the workgroup's partial sums of squares (at most 64 invocations)
#ifdef PAGED
shared float vals[512];   // a quantized row's values, then
shared float scales[16];  // its blocks' scales
#endif

// Pair i's position for token t: the token's, or (M-RoPE) its section's component.
float pair_pos(uint i, uint t, float pos) {
  if ((p.flags & 8u) == 0u) return pos;
  const uint sector = i % (p.sec0 + p.sec1 + p.sec2 + p.sec3);
  if ((p.flags & 16u) != 0u) {  // interleaved (Qwen3-VL): h, w every third pair
    const uint ci = sector % 3u == 1u && sector < 3u * p.sec1   ? 1u
                    : sector % 3u == 2u && sector < 3u * p.sec2 ? 2u
                                                                : 0u;
    return float(mrope_pos[3u * t + ci]);
  }
  const uint c = sector < p.sec0                     ? 0u
                 : sector < p.sec0 + p.sec1          ? 1u
                 : sector < p.sec0 + p.sec1 + p.sec2 ? 2u
                                                     : 0u;
  return float(mrope_pos[3u * t + c]);
}

float rotated(uint d, float pos, uint t) {
  if (d >= p.n_dims || (p.flags & 4u) != 0u) return row[d];
  const bool neox = (p.flags & 1u) != 0u;
  const uint half_dims = p.n_dims / 2u;
  const uint i = neox ? d % half_dims : d / 2u;
  const bool first = neox ? d < half_dims : (d & 1u) == 0u;
  const uint partner = neox ? (first ? d + half_dims : d - half_dims) : d ^ 1u;
  float theta = rope_angle(pair_pos(i, t, pos), i, p.n_dims, p.freq_base, p.freq_scale);
  if ((p.flags & 2u) != 0u) theta /= freq_factors[i];
  const float c = cos(theta), s = sin(theta);
  return first ? row[d] * c - row[partner] * s : row[partner] * s + row[d] * c;
}

void main() {
  const uint h = gl_WorkGroupID.x;
  const uint t = gl_WorkGroupID.y;
  if (h >= p.n_heads || t >= p.n_tokens) return;
  const uint nt = gl_WorkGroupSize.x;
  const uint sb = p.src_off + t * p.src_stride + h * p.head_dim;
  for (uint d = gl_LocalInvocationIndex; d < p.head_dim; d += nt) {
    float v = src[sb + d];
    for (uint s = 1u; s < p.src_splits; ++s) v += src[sb + d + s * p.src_split_stride];
    row[d] = v;
  }
  barrier();
  if ((p.flags & 32u) != 0u) {
    // Each invocation rescales the elements it staged; the rotation below reads partners.
    float ss = 0.0;
    for (uint d = gl_LocalInvocationIndex; d < p.head_dim; d += nt) ss += row[d] * row[d];
    norm_part[gl_LocalInvocationIndex] = ss;
    barrier();
    for (uint s = nt / 2u; s > 0u; s >>= 1) {
      if (gl_LocalInvocationIndex < s)
        norm_part[gl_LocalInvocationIndex] += norm_part[gl_LocalInvocationIndex + s];
      barrier();
    }
    const float inv = inversesqrt(norm_part[0] / float(p.head_dim) + p.norm_eps);
    const bool weighted = (p.flags & 64u) != 0u;
    for (uint d = gl_LocalInvocationIndex; d < p.head_dim; d += nt)
      row[d] = weighted ? row[d] * inv * norm_w[d] : row[d] * inv;
    barrier();
  }
  const float pos = float(meta_token_pos(p.n_tokens, t));
#ifdef PAGED
  const uint seq = meta_token_seq(p.n_tokens, t);
  const uint ipos = meta_token_pos(p.n_tokens, t);
  const uint block = meta_block(meta_seq_table(p.n_tokens, p.n_seqs, seq), ipos, p.block_size);
  const uint slot = ipos % p.block_size;
  const uint row_id = (block * p.cache_heads + h) * p.block_size + slot;
  if (KV_TYPE == 0u) {
    const uint base = row_id * (p.head_dim / 2u);
    for (uint j = gl_LocalInvocationIndex; j < p.head_dim / 2u; j += nt) {
#ifdef NO_ROPE
      const vec2 v = vec2(row[2u * j], row[2u * j + 1u]);
#else
      const vec2 v = vec2(rotated(2u * j, pos, t), rotated(2u * j + 1u, pos, t));
#endif
      cache[base + j] = packHalf2x16(v);
    }
    return;
  }
  for (uint d = gl_LocalInvocationIndex; d < p.head_dim; d += nt) {
#ifdef NO_ROPE
    vals[d] = row[d];
#else
    vals[d] = rotated(d, pos, t);
#endif
  }
  barrier();
  // Scales: q8_0 d = max|x| / 127; q4_0 d = (the value of largest magnitude) / -8.
  const uint blocks = p.head_dim / 32u;
  for (uint b = gl_LocalInvocationIndex; b < blocks; b += nt) {
    float amax = 0.0, mx = 0.0;
    for (uint i = 0u; i < 32u; ++i) {
      const float x = vals[32u * b + i];
      if (abs(x) > amax) {
        amax = abs(x);
        mx = x;
      }
    }
    scales[b] = KV_TYPE == 1u ? amax / 127.0 : mx / -8.0;
  }
  barrier();
  const uint per_word = KV_TYPE == 1u ? 4u : 8u;  // quants per word
  const uint quant_words = p.head_dim / per_word;
  const uint base = row_id * (quant_words + (blocks + 1u) / 2u);
  for (uint w = gl_LocalInvocationIndex; w < quant_words; w += nt) {
    const float d = scales[w * per_word / 32u];
    const float id = d != 0.0 ? 1.0 / d : 0.0;
    uint word = 0u;
    for (uint i = 0u; i < per_word; ++i) {
      const float x = vals[w * per_word + i] * id;
      if (KV_TYPE == 1u) {
        // roundf: halves away from zero
        const int q = int(sign(x) * floor(abs(x) + 0.5));
        word |= (uint(q) & 0xFFu) << (8u * i);
      } else {
        word |= min(15u, uint(x + 8.5)) << (4u * i);
      }
    }
    cache[base + w] = word;
  }
  for (uint w = gl_LocalInvocationIndex; w < (blocks + 1u) / 2u; w += nt) {
    const float hi = 2u * w + 1u < blocks ? scales[2u * w + 1u] : 0.0;
    cache[base + quant_words + w] = packHalf2x16(vec2(scales[2u * w], hi));
  }
#else
  const uint db = p.dst_off + t * p.dst_stride + h * p.head_dim;
  float temp = 1.0;
  if (p.temp_scale != 0.0) {
    const uint at = meta_token_pos(p.n_tokens, t) + p.temp_offset;
    temp = log(float(at / p.temp_floor) + 1.0) * p.temp_scale + 1.0;
  }
  for (uint d = gl_LocalInvocationIndex; d < p.head_dim; d += nt)
    dst[db + d] = rotated(d, pos, t) * temp;
#endif
}
