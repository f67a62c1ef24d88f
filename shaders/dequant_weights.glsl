// Weight decoding for the matvec/matmul kernels: ggml block layouts read in place (bit for bit as
// engine/gguf/block_layouts.h), one weight type per compile selected by a TYPE_* define.
//
// Every type exposes the same interface so the kernels stay type-agnostic:
//   QK      elements per block (4 for the plain float types: a "block" is one vec4 of weights)
//   QBYTES  bytes per block
//   UNIT    contiguous elements decoded per call, inside one aligned 32-element window of a block
//   void dequant_init()  must run before any decode, followed by a barrier (fills lookup tables)
//   void dequant_unit(uint off, uint e, out vec4 w[UNIT / 4])
//           decodes elements e .. e+UNIT-1 of the block starting at byte offset `off`.
//
// The weights are bound at binding 0 as raw words. Blocks of several formats are only 2-byte
// aligned (Q4_0 18 B, Q5_0 22 B, Q8_0 34 B, Q3_K 110 B, Q6_K 210 B); those are read with 32-bit
// loads plus a funnel shift instead of 16-bit loads, which is why a weight buffer must stay
// readable for 16 bytes past the end of the tensor.

#extension GL_EXT_control_flow_attributes : enable

layout(std430, binding = 0) readonly buffer WeightWords { uint wq[]; };
layout(std430, binding = 0) readonly buffer WeightQuads { uvec4 wq4[]; };
layout(std430, binding = 0) readonly buffer WeightPairs { uvec2 wq2[]; };
layout(std430, binding = 0) readonly buffer WeightFloats { vec4 wf4[]; };

// Word at a 2-byte aligned offset, without a branch (lanes of one warp see both alignments).
uint load_u32_a2(uint off) {
  const uint i = off >> 2;
  const uint s = (off & 2u) << 3;
  // (b << 1) << (31 - s) is b << (32 - s) without the undefined shift by 32 when s == 0.
  return (wq[i] >> s) | ((wq[i + 1u] << 1u) << (31u - s));
}

uvec4 load_u128_a2(uint off) {
  const uint i = off >> 2;
  const uint s = (off & 2u) << 3;
  const uvec4 a = uvec4(wq[i], wq[i + 1u], wq[i + 2u], wq[i + 3u]);
  const uvec4 b = uvec4(a.yzw, wq[i + 4u]);
  return (a >> s) | ((b << 1u) << (31u - s));
}

uvec4 load_u128_a4(uint off) {
  const uint i = off >> 2;
  return uvec4(wq[i], wq[i + 1u], wq[i + 2u], wq[i + 3u]);
}

uint load_u16_a2(uint off) { return (wq[off >> 2] >> ((off & 2u) << 3)) & 0xFFFFu; }

float load_f16_a2(uint off) { return unpackHalf2x16(load_u16_a2(off)).x; }

// The four bytes of v (optionally after a shift) masked to `mask` bits, as floats.
vec4 bytes_f(uint v) { return vec4((uvec4(v) >> uvec4(0u, 8u, 16u, 24u)) & 0xFFu); }
vec4 nibbles_lo(uint v) { return bytes_f(v & 0x0F0F0F0Fu); }
vec4 nibbles_hi(uint v) { return bytes_f((v >> 4) & 0x0F0F0F0Fu); }
vec4 bytes_signed_f(uint v) { return vec4(ivec4(uvec4(v) << uvec4(24u, 16u, 8u, 0u)) >> 24); }

#if defined(TYPE_IQ4_NL) || defined(TYPE_IQ4_XS)
// The non-linear 4-bit grid of IQ4_NL / IQ4_XS, in shared memory: a constant array indexed by a
// different value in each lane would serialize on NVIDIA's constant cache.
shared float iq4nl_values[16];
void dequant_init() {
  if (gl_LocalInvocationIndex < 16u) {
    const float v[16] = float[16](-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0, 1.0,
                                  13.0, 25.0, 38.0, 53.0, 69.0, 89.0, 113.0);
    iq4nl_values[gl_LocalInvocationIndex] = v[gl_LocalInvocationIndex];
  }
}
vec4 iq4nl_f(uint nibbles) {
  return vec4(iq4nl_values[nibbles & 15u], iq4nl_values[(nibbles >> 8) & 15u],
              iq4nl_values[(nibbles >> 16) & 15u], iq4nl_values[(nibbles >> 24) & 15u]);
}
#else
void dequant_init() {}
#endif

#if defined(TYPE_F32)
#define QK 4u
#define QBYTES 16u
#define UNIT 4
void dequant_unit(uint off, uint e, out vec4 w[UNIT / 4]) { w[0] = wf4[off >> 4]; }

#elif defined(TYPE_F16)
#define QK 4u
#define QBYTES 8u
#define UNIT 4
void dequant_unit(uint off, uint e, out vec4 w[UNIT / 4]) {
  const uvec2 h = wq2[off >> 3];
  w[0] = vec4(unpackHalf2x16(h.x), unpackHalf2x16(h.y));
}

#elif defined(TYPE_BF16)
#define QK 4u
#define QBYTES 8u
#define UNIT 4
void dequant_unit(uint off, uint e, out vec4 w[UNIT / 4]) {
  const uvec2 h = wq2[off >> 3];
  w[0] = uintBitsToFloat(uvec4(h.x << 16, h.x & 0xFFFF0000u, h.y << 16, h.y & 0xFFFF0000u));
}

#elif defined(TYPE_Q4_0)
#define QK 32u
#define QBYTES 18u
#define UNIT 32
void dequant_unit(uint off, uint e, out vec4 w[UNIT / 4]) {
  const float d = load_f16_a2(off);
  const uvec4 q = load_u128_a2(off + 2u);
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    w[i] = d * (nibbles_lo(q[i]) - 8.0);
    w[i + 4u] = d * (nibbles_hi(q[i]) - 8.0);
  }
}

#elif defined(TYPE_Q4_1)
#define QK 32u
#define QBYTES 20u
#define UNIT 32
void dequant_unit(uint off, uint e, out vec4 w[UNIT / 4]) {
  const vec2 dm = unpackHalf2x16(wq[off >> 2]);
  const uvec4 q = load_u128_a4(off + 4u);
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    w[i] = dm.x * nibbles_lo(q[i]) + dm.y;
    w[i + 4u] = dm.x * nibbles_hi(q[i]) + dm.y;
  }
}

#elif defined(TYPE_Q5_0)
#define QK 32u
#define QBYTES 22u
#define UNIT 32
void dequant_unit(uint off, uint e, out vec4 w[UNIT / 4]) {
  const float d = load_f16_a2(off);
  const uint qh = load_u32_a2(off + 2u);
  const uvec4 q = load_u128_a2(off + 6u);
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    // Bit j of qh is the fifth bit of element j; spread four of them onto the four bytes.
    const uint hl = (((qh >> (4u * i)) & 0xFu) * 0x00204081u) & 0x01010101u;
    const uint hh = (((qh >> (4u * i + 16u)) & 0xFu) * 0x00204081u) & 0x01010101u;
    w[i] = d * (bytes_f((q[i] & 0x0F0F0F0Fu) | (hl << 4)) - 16.0);
    w[i + 4u] = d * (bytes_f(((q[i] >> 4) & 0x0F0F0F0Fu) | (hh << 4)) - 16.0);
  }
}

#elif defined(TYPE_Q5_1)
#define QK 32u
#define QBYTES 24u
#define UNIT 32
void dequant_unit(uint off, uint e, out vec4 w[UNIT / 4]) {
  const vec2 dm = unpackHalf2x16(wq[off >> 2]);
  const uint qh = wq[(off >> 2) + 1u];
  const uvec4 q = load_u128_a4(off + 8u);
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    const uint hl = (((qh >> (4u * i)) & 0xFu) * 0x00204081u) & 0x01010101u;
    const uint hh = (((qh >> (4u * i + 16u)) & 0xFu) * 0x00204081u) & 0x01010101u;
    w[i] = dm.x * bytes_f((q[i] & 0x0F0F0F0Fu) | (hl << 4)) + dm.y;
    w[i + 4u] = dm.x * bytes_f(((q[i] >> 4) & 0x0F0F0F0Fu) | (hh << 4)) + dm.y;
  }
}

#elif defined(TYPE_Q8_0)
#define QK 32u
#define QBYTES 34u
#define UNIT 32
void dequant_unit(uint off, uint e, out vec4 w[UNIT / 4]) {
  const float d = load_f16_a2(off);
  const uvec4 q0 = load_u128_a2(off + 2u);
  const uvec4 q1 = load_u128_a2(off + 18u);
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    w[i] = d * bytes_signed_f(q0[i]);
    w[i + 4u] = d * bytes_signed_f(q1[i]);
  }
}

#elif defined(TYPE_IQ4_NL)
#define QK 32u
#define QBYTES 18u
#define UNIT 32
void dequant_unit(uint off, uint e, out vec4 w[UNIT / 4]) {
  const float d = load_f16_a2(off);
  const uvec4 q = load_u128_a2(off + 2u);
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    w[i] = d * iq4nl_f(q[i]);
    w[i + 4u] = d * iq4nl_f(q[i] >> 4);
  }
}

#elif defined(TYPE_Q2_K)
#define QK 256u
#define QBYTES 84u
#define UNIT 32
void dequant_unit(uint off, uint e, out vec4 w[UNIT / 4]) {
  const uint g = e >> 5;  // 32-element window: half g / 4, bit pair g % 4
  const uint shift = 2u * (g & 3u);
  const uint qoff = off + 16u + 32u * (g >> 2);
  const uvec4 qa = load_u128_a4(qoff);
  const uvec4 qb = load_u128_a4(qoff + 16u);
  const uint sc = (wq[(off >> 2) + (g >> 1)] >> (16u * (g & 1u))) & 0xFFFFu;
  const vec2 dm = unpackHalf2x16(wq[(off >> 2) + 20u]);
  const float d0 = dm.x * float(sc & 15u), m0 = dm.y * float((sc >> 4) & 15u);
  const float d1 = dm.x * float((sc >> 8) & 15u), m1 = dm.y * float(sc >> 12);
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    w[i] = d0 * bytes_f((qa[i] >> shift) & 0x03030303u) - m0;
    w[i + 4u] = d1 * bytes_f((qb[i] >> shift) & 0x03030303u) - m1;
  }
}

#elif defined(TYPE_Q3_K)
#define QK 256u
#define QBYTES 110u
#define UNIT 32
// 6-bit scale i (0..15) from the three 12-byte-area words: low 4 bits from bytes 0..7, high 2
// bits from bytes 8..11.
uint q3k_scale(uint a0, uint a1, uint a2, uint i) {
  const uint lo = (((i & 7u) < 4u ? a0 : a1) >> (8u * (i & 3u) + 4u * (i >> 3))) & 15u;
  const uint hi = (a2 >> (8u * (i & 3u) + 2u * (i >> 2))) & 3u;
  return lo | (hi << 4);
}
void dequant_unit(uint off, uint e, out vec4 w[UNIT / 4]) {
  const uint g = e >> 5;
  const uint h = g >> 2, j = g & 3u;
  const uvec4 ma = load_u128_a2(off);
  const uvec4 mb = load_u128_a2(off + 16u);
  const uvec4 qa = load_u128_a2(off + 32u + 32u * h);
  const uvec4 qb = load_u128_a2(off + 48u + 32u * h);
  const uint a0 = load_u32_a2(off + 96u), a1 = load_u32_a2(off + 100u),
             a2 = load_u32_a2(off + 104u);
  const float d = load_f16_a2(off + 108u);
  const float d0 = d * (float(q3k_scale(a0, a1, a2, 2u * g)) - 32.0);
  const float d1 = d * (float(q3k_scale(a0, a1, a2, 2u * g + 1u)) - 32.0);
  const uint hbit = 4u * h + j;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    // q + 4 * hmask_bit - 4: the 3-bit value, offset by 4 when the high bit is clear.
    const uint va = ((qa[i] >> (2u * j)) & 0x03030303u) | (((ma[i] >> hbit) & 0x01010101u) << 2);
    const uint vb = ((qb[i] >> (2u * j)) & 0x03030303u) | (((mb[i] >> hbit) & 0x01010101u) << 2);
    w[i] = d0 * (bytes_f(va) - 4.0);
    w[i + 4u] = d1 * (bytes_f(vb) - 4.0);
  }
}

#elif defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
#define QK 256u
#if defined(TYPE_Q4_K)
#define QBYTES 144u
#define QS_OFF 16u
#else
#define QBYTES 176u
#define QS_OFF 48u
#endif
#define UNIT 32
void dequant_unit(uint off, uint e, out vec4 w[UNIT / 4]) {
  const uint g = e >> 5;  // group 0..7: nibble plane g & 1 of qs[32 (g / 2) ..]
  const uint b = off >> 2;
  const vec2 dm = unpackHalf2x16(wq[b]);
  const uint s0 = wq[b + 1u], s1 = wq[b + 2u], s2 = wq[b + 3u];
  const uint k = 8u * (g & 3u);
  uint sc, mn;
  if (g < 4u) {
    sc = (s0 >> k) & 63u;
    mn = (s1 >> k) & 63u;
  } else {
    sc = ((s2 >> k) & 15u) | (((s0 >> k) >> 6 & 3u) << 4);
    mn = ((s2 >> k) >> 4 & 15u) | (((s1 >> k) >> 6 & 3u) << 4);
  }
  const float d = dm.x * float(sc), m = dm.y * float(mn);
  const uint q4 = (off + QS_OFF + 32u * (g >> 1)) >> 4;
  const uvec4 qa = wq4[q4], qb = wq4[q4 + 1u];
  const uint shift = 4u * (g & 1u);
#if defined(TYPE_Q5_K)
  const uvec4 ha = wq4[(off >> 4) + 1u], hb = wq4[(off >> 4) + 2u];
#endif
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    uint va = (qa[i] >> shift) & 0x0F0F0F0Fu;
    uint vb = (qb[i] >> shift) & 0x0F0F0F0Fu;
#if defined(TYPE_Q5_K)
    va |= ((ha[i] >> g) & 0x01010101u) << 4;
    vb |= ((hb[i] >> g) & 0x01010101u) << 4;
#endif
    w[i] = d * bytes_f(va) - m;
    w[i + 4u] = d * bytes_f(vb) - m;
  }
}

#elif defined(TYPE_Q6_K)
#define QK 256u
#define QBYTES 210u
#define UNIT 32
void dequant_unit(uint off, uint e, out vec4 w[UNIT / 4]) {
  const uint g = e >> 5;
  const uint h = g >> 2, qq = g & 3u;
  const uint loff = off + 64u * h + 32u * (qq & 1u);
  const uvec4 la = load_u128_a2(loff), lb = load_u128_a2(loff + 16u);
  const uvec4 ha = load_u128_a2(off + 128u + 32u * h), hb = load_u128_a2(off + 144u + 32u * h);
  const uint sc = load_u16_a2(off + 192u + 2u * g);
  const float d = load_f16_a2(off + 208u);
  const float d0 = d * float(int(sc << 24) >> 24), d1 = d * float(int(sc << 16) >> 24);
  const uint ls = 4u * (qq >> 1), hs = 2u * qq;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    const uint va = ((la[i] >> ls) & 0x0F0F0F0Fu) | (((ha[i] >> hs) & 0x03030303u) << 4);
    const uint vb = ((lb[i] >> ls) & 0x0F0F0F0Fu) | (((hb[i] >> hs) & 0x03030303u) << 4);
    w[i] = d0 * (bytes_f(va) - 32.0);
    w[i + 4u] = d1 * (bytes_f(vb) - 32.0);
  }
}

#elif defined(TYPE_IQ4_XS)
#define QK 256u
#define QBYTES 136u
#define UNIT 32
void dequant_unit(uint off, uint e, out vec4 w[UNIT / 4]) {
  const uint g = e >> 5;
  const uint w0 = wq[off >> 2];
  const uint sl = wq[(off >> 2) + 1u];
  const uint ls = ((sl >> (4u * g)) & 15u) | (((w0 >> (16u + 2u * g)) & 3u) << 4);
  const float d = unpackHalf2x16(w0).x * (float(ls) - 32.0);
  const uvec4 q = load_u128_a4(off + 8u + 16u * g);
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    w[i] = d * iq4nl_f(q[i]);
    w[i + 4u] = d * iq4nl_f(q[i] >> 4);
  }
}

#else
#error "dequant_weights.glsl: define one TYPE_* weight type"
#endif
