// Weight decoding for the matvec/matmul kernels: ggml block layouts read in place (bit for bit as
// engine/gguf/block_layouts.h, but for Q8_0 and Q6_K, whose blocks are regrouped on upload: see
// repacked_body), one weight type per compile selected by a TYPE_* define.
//
// Every type exposes the same interface so the kernels stay type-agnostic:
//   QK      elements per block (4 for the plain float types: a "block" is one vec4 of weights)
//   QBYTES  bytes per block
//   UNIT    elements decoded per call (8 for quants, 4 for float types), as UNIT/4 vec4s; a block
//           holds QK/UNIT units, and the units of an aligned 32-element window stay inside it
//   void dequant_init()  must run before any decode, followed by a barrier (fills lookup tables)
//   uint unit_pos(uint u, uint v)  element offset in its block of vec4 v of unit u
//   void dequant_unit(uint off, uint u, out vec4 w[UNIT / 4])
//           decodes unit u of the block starting at byte offset `off`.
// The types of the common model files (F16, Q8_0, Q4_K, Q5_K, Q6_K) also split it in two, for
// kernels that load one K slice while they decode the previous one (HAS_UNIT_RAW):
//   RAW_WORDS  words a unit's decode reads
//   void unit_raw(uint off, uint u, out uint r[RAW_WORDS])      only the loads
//   void unit_decode(uint off, uint u, uint r[RAW_WORDS], out vec4 w[UNIT / 4])  no loads
// and dequant_unit is the two in a row, so every kernel that decodes these types tests them.
// With DEQUANT_F16 defined (kernels that feed f16 tensor-core fragments; needs the float16
// arithmetic extension) they also offer
//   void unit_decode_f16(uint off, uint u, uint r[RAW_WORDS], out uvec2 h[UNIT / 4])
// the same unit as packed f16 pairs, computed in f16 from the integer codes: about half the
// instructions of decoding to f32 and converting (the codes become halves by an OR with the bit
// pattern of 1024.0 and one subtraction, both exact; then one f16 FMA per pair rounds once).
//
// Eight weights per call (not a whole block) keep neighbouring invocations on neighbouring bytes
// of both the weights and the activations, so a subgroup's loads coalesce; the legacy 4-bit
// formats pair the low and high nibbles of 4 bytes (elements j..j+3 and j+16..j+19) as ggml
// stores them.
//
// The weights are bound at binding 0 as raw words. Blocks of several formats are only 2-byte
// aligned (Q4_0 18 B, Q5_0 22 B, Q3_K 110 B); those are read with 32-bit loads plus a funnel
// shift instead of 16-bit loads (MXFP4's 17-byte blocks, only byte aligned, the same way), which
// is why a weight buffer must stay readable for 8 bytes past the end of the tensor. Q8_0 (34 B) and Q6_K (210 B), the common ones, are repacked on upload
// so that they need neither (see repacked_body).

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

uvec2 load_u64_a2(uint off) {
  const uint i = off >> 2;
  const uint s = (off & 2u) << 3;
  const uvec2 a = uvec2(wq[i], wq[i + 1u]);
  const uvec2 b = uvec2(a.y, wq[i + 2u]);
  return (a >> s) | ((b << 1u) << (31u - s));
}

// load_f16_a2 from the word already loaded at off >> 2, for the split decoders.
float shift_f16_a2(uint off, uint a) { return unpackHalf2x16(a >> ((off & 2u) << 3)).x; }

// Word at any byte offset (MXFP4's 17-byte blocks): the same funnel shift by 0, 8, 16 or 24.
uint load_u32_a1(uint off) {
  const uint i = off >> 2;
  const uint s = (off & 3u) << 3;
  return (wq[i] >> s) | ((wq[i + 1u] << 1u) << (31u - s));
}

uint load_u16_a2(uint off) { return (wq[off >> 2] >> ((off & 2u) << 3)) & 0xFFFFu; }

uint load_u8(uint off) { return (wq[off >> 2] >> ((off & 3u) << 3)) & 0xFFu; }

float load_f16_a2(uint off) { return unpackHalf2x16(load_u16_a2(off)).x; }

// Q8_0 and Q6_K are repacked on the device (engine/vulkan/weight_layout.h): groups of 8 blocks,
// the blocks without their 2-byte scale, then the 8 scales. `off` stays the block's byte offset
// in the file layout (QBYTES is the file's block size); the group starts where its first block
// did, and the block is the group's ((off) / QBYTES) & 7-th.
#define repacked_group(off) ((((off) / QBYTES) >> 3) * (8u * QBYTES))
#define repacked_body(off) (repacked_group(off) + (((off) / QBYTES) & 7u) * (QBYTES - 2u))
#define repacked_scale_off(off) \
  (repacked_group(off) + 8u * (QBYTES - 2u) + 2u * (((off) / QBYTES) & 7u))

#ifdef DEQUANT_F16
// The four bytes of v as 1024 + byte in f16, in order (b0, b1, b2, b3): 0x6400 is 1024.0 and its
// 10 mantissa bits hold any byte exactly.
f16vec4 bytes_biased_f16(uint v) {
  const uint lo = (v & 0xFFu) | ((v & 0xFF00u) << 8);
  const uint hi = ((v >> 16) & 0xFFu) | ((v >> 8) & 0xFF0000u);
  return f16vec4(unpackFloat2x16(lo | 0x64006400u), unpackFloat2x16(hi | 0x64006400u));
}
uvec2 pack_f16vec4(f16vec4 v) { return uvec2(packFloat2x16(v.xy), packFloat2x16(v.zw)); }
float16_t to_f16_clamped(float v) { return float16_t(clamp(v, -65504.0, 65504.0)); }
#endif

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
#elif defined(TYPE_MXFP4)
// MXFP4's E2M1 codes, doubled (as ggml's kvalues_mxfp4) so that the block scale is 2^(e - 128);
// in shared memory for the same reason as the IQ4 grid.
shared float mxfp4_values[16];
void dequant_init() {
  if (gl_LocalInvocationIndex < 16u) {
    const float v[16] = float[16](0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 0.0, -1.0, -2.0, -3.0,
                                  -4.0, -6.0, -8.0, -12.0);
    mxfp4_values[gl_LocalInvocationIndex] = v[gl_LocalInvocationIndex];
  }
}
vec4 mxfp4_f(uint nibbles) {
  return vec4(mxfp4_values[nibbles & 15u], mxfp4_values[(nibbles >> 8) & 15u],
              mxfp4_values[(nibbles >> 16) & 15u], mxfp4_values[(nibbles >> 24) & 15u]);
}
#else
void dequant_init() {}
#endif

#if defined(TYPE_F16) && defined(F16_WIDE)
// F16 rows of a multiple of 8 in units of 8 halves: one 16-byte load a unit where the units of 4
// take 8-byte ones (the matvec_f16w kernels; the host picks them for such rows).
#define QK 8u
#define UNIT 8
#define QBYTES 16u
uint unit_pos(uint u, uint v) { return 4u * v; }
void dequant_unit(uint off, uint u, out vec4 w[UNIT / 4]) {
  const uvec4 h = wq4[off >> 4];
  w[0] = vec4(unpackHalf2x16(h.x), unpackHalf2x16(h.y));
  w[1] = vec4(unpackHalf2x16(h.z), unpackHalf2x16(h.w));
}

#elif defined(TYPE_F32) || defined(TYPE_F16) || defined(TYPE_BF16)
#define QK 4u
#define UNIT 4
uint unit_pos(uint u, uint v) { return 0u; }
#if defined(TYPE_F32)
#define QBYTES 16u
void dequant_unit(uint off, uint u, out vec4 w[UNIT / 4]) { w[0] = wf4[off >> 4]; }
#elif defined(TYPE_F16)
#define QBYTES 8u
#define HAS_UNIT_RAW
#define RAW_WORDS 2
void unit_raw(uint off, uint u, out uint r[RAW_WORDS]) {
  const uvec2 h = wq2[off >> 3];
  r[0] = h.x;
  r[1] = h.y;
}
void unit_decode(uint off, uint u, uint r[RAW_WORDS], out vec4 w[UNIT / 4]) {
  w[0] = vec4(unpackHalf2x16(r[0]), unpackHalf2x16(r[1]));
}
#ifdef DEQUANT_F16
void unit_decode_f16(uint off, uint u, uint r[RAW_WORDS], out uvec2 h[UNIT / 4]) {
  h[0] = uvec2(r[0], r[1]);
}
#endif
#else
#define QBYTES 8u
void dequant_unit(uint off, uint u, out vec4 w[UNIT / 4]) {
  const uvec2 h = wq2[off >> 3];
  w[0] = uintBitsToFloat(uvec4(h.x << 16, h.x & 0xFFFF0000u, h.y << 16, h.y & 0xFFFF0000u));
}
#endif

#elif defined(TYPE_Q4_0) || defined(TYPE_Q4_1) || defined(TYPE_Q5_0) || defined(TYPE_Q5_1) || \
    defined(TYPE_IQ4_NL)
// Unit u: the 4 bytes qs[4u .. 4u+3], i.e. elements 4u..4u+3 (low nibbles) and 16+4u.. (high).
#define QK 32u
#define UNIT 8
uint unit_pos(uint u, uint v) { return 4u * u + 16u * v; }
// Spreads 4 bits onto the lowest bit of each of the 4 bytes (the fifth bit of Q5 weights).
uint spread4(uint b) { return ((b & 0xFu) * 0x00204081u) & 0x01010101u; }
#if defined(TYPE_Q4_0)
#define QBYTES 18u
void dequant_unit(uint off, uint u, out vec4 w[UNIT / 4]) {
  const float d = load_f16_a2(off);
  const uint q = load_u32_a2(off + 2u + 4u * u);
  w[0] = d * (nibbles_lo(q) - 8.0);
  w[1] = d * (nibbles_hi(q) - 8.0);
}
#elif defined(TYPE_IQ4_NL)
#define QBYTES 18u
void dequant_unit(uint off, uint u, out vec4 w[UNIT / 4]) {
  const float d = load_f16_a2(off);
  const uint q = load_u32_a2(off + 2u + 4u * u);
  w[0] = d * iq4nl_f(q);
  w[1] = d * iq4nl_f(q >> 4);
}
#elif defined(TYPE_Q4_1)
#define QBYTES 20u
void dequant_unit(uint off, uint u, out vec4 w[UNIT / 4]) {
  const vec2 dm = unpackHalf2x16(wq[off >> 2]);
  const uint q = wq[(off >> 2) + 1u + u];
  w[0] = dm.x * nibbles_lo(q) + dm.y;
  w[1] = dm.x * nibbles_hi(q) + dm.y;
}
#elif defined(TYPE_Q5_0)
#define QBYTES 22u
void dequant_unit(uint off, uint u, out vec4 w[UNIT / 4]) {
  const float d = load_f16_a2(off);
  const uint qh = load_u32_a2(off + 2u);
  const uint q = load_u32_a2(off + 6u + 4u * u);
  w[0] = d * (bytes_f((q & 0x0F0F0F0Fu) | (spread4(qh >> (4u * u)) << 4)) - 16.0);
  w[1] = d * (bytes_f(((q >> 4) & 0x0F0F0F0Fu) | (spread4(qh >> (4u * u + 16u)) << 4)) - 16.0);
}
#else
#define QBYTES 24u
void dequant_unit(uint off, uint u, out vec4 w[UNIT / 4]) {
  const vec2 dm = unpackHalf2x16(wq[off >> 2]);
  const uint qh = wq[(off >> 2) + 1u];
  const uint q = wq[(off >> 2) + 2u + u];
  w[0] = dm.x * bytes_f((q & 0x0F0F0F0Fu) | (spread4(qh >> (4u * u)) << 4)) + dm.y;
  w[1] = dm.x * bytes_f(((q >> 4) & 0x0F0F0F0Fu) | (spread4(qh >> (4u * u + 16u)) << 4)) + dm.y;
}
#endif

#elif defined(TYPE_MXFP4)
// One E8M0 exponent byte, then 16 bytes of codes placed as in Q4_0 (unit u: bytes 4u..4u+3 of
// them, elements 4u.. in the low nibbles and 16 + 4u.. in the high ones). 17-byte blocks are
// only byte aligned: word loads with a funnel shift. The scale 2^(e - 128) is built from its bits
// (e = 0 and 1 are subnormal, which devices may flush to zero: such blocks only hold values
// below 1e-37).
#define QK 32u
#define UNIT 8
#define QBYTES 17u
uint unit_pos(uint u, uint v) { return 4u * u + 16u * v; }
void dequant_unit(uint off, uint u, out vec4 w[UNIT / 4]) {
  const uint e = load_u8(off);
  const float d = uintBitsToFloat(e < 2u ? 0x00200000u << e : (e - 1u) << 23);
  const uint q = load_u32_a1(off + 1u + 4u * u);
  w[0] = d * mxfp4_f(q);
  w[1] = d * mxfp4_f(q >> 4);
}

#elif defined(TYPE_Q8_0)
#define QK 32u
#define QBYTES 34u
#define UNIT 8
uint unit_pos(uint u, uint v) { return 8u * u + 4u * v; }
#define HAS_UNIT_RAW
#define RAW_WORDS 3
void unit_raw(uint off, uint u, out uint r[RAW_WORDS]) {
  r[0] = wq[repacked_scale_off(off) >> 2];
  const uvec2 q = wq2[(repacked_body(off) + 8u * u) >> 3];
  r[1] = q.x;
  r[2] = q.y;
}
void unit_decode(uint off, uint u, uint r[RAW_WORDS], out vec4 w[UNIT / 4]) {
  const float d = shift_f16_a2(repacked_scale_off(off), r[0]);
  w[0] = d * bytes_signed_f(r[1]);
  w[1] = d * bytes_signed_f(r[2]);
}
#ifdef DEQUANT_F16
void unit_decode_f16(uint off, uint u, uint r[RAW_WORDS], out uvec2 h[UNIT / 4]) {
  const f16vec4 d = f16vec4(float16_t(shift_f16_a2(repacked_scale_off(off), r[0])));
  const f16vec4 bias = f16vec4(float16_t(1152.0));  // 1024 + the 128 that the XOR adds
  h[0] = pack_f16vec4((bytes_biased_f16(r[1] ^ 0x80808080u) - bias) * d);
  h[1] = pack_f16vec4((bytes_biased_f16(r[2] ^ 0x80808080u) - bias) * d);
}
#endif

#elif defined(TYPE_Q2_K)
#define QK 256u
#define QBYTES 84u
#define UNIT 8
uint unit_pos(uint u, uint v) { return 8u * u + 4u * v; }
void dequant_unit(uint off, uint u, out vec4 w[UNIT / 4]) {
  // Elements 32 g + l of window g = u / 4 are bit pair g % 4 of qs[32 (g / 4) + l].
  const uint g = u >> 2;
  const uint shift = 2u * (g & 3u);
  const uint b = off >> 2;
  const uint qw = b + 4u + 8u * (g >> 2) + 2u * (u & 3u);
  const uint q0 = wq[qw], q1 = wq[qw + 1u];
  const uint sc = (wq[b + (u >> 3)] >> (8u * ((u >> 1) & 3u))) & 0xFFu;
  const vec2 dm = unpackHalf2x16(wq[b + 20u]);
  const float d = dm.x * float(sc & 15u), m = dm.y * float(sc >> 4);
  w[0] = d * bytes_f((q0 >> shift) & 0x03030303u) - m;
  w[1] = d * bytes_f((q1 >> shift) & 0x03030303u) - m;
}

#elif defined(TYPE_Q3_K)
#define QK 256u
#define QBYTES 110u
#define UNIT 8
uint unit_pos(uint u, uint v) { return 8u * u + 4u * v; }
void dequant_unit(uint off, uint u, out vec4 w[UNIT / 4]) {
  const uint g = u >> 2, l = 8u * (u & 3u);
  const uint h = g >> 2, j = g & 3u;
  const uvec2 m = load_u64_a2(off + l);
  const uvec2 q = load_u64_a2(off + 32u + 32u * h + l);
  // 6-bit scale i = u / 2: low 4 bits from bytes 0..7 (nibble i / 8), high 2 from bytes 8..11.
  const uint i = u >> 1;
  const uint lo = (load_u32_a2(off + 96u + 4u * ((i & 7u) >> 2)) >> (8u * (i & 3u) + 4u * (i >> 3))) & 15u;
  const uint hi = (load_u32_a2(off + 104u) >> (8u * (i & 3u) + 2u * (i >> 2))) & 3u;
  const float d = load_f16_a2(off + 108u) * (float(lo | (hi << 4)) - 32.0);
  const uint hbit = 4u * h + j;
  // q + 4 * hmask_bit - 4: the 3-bit value, offset by 4 when the high bit is clear.
  const uint v0 = ((q.x >> (2u * j)) & 0x03030303u) | (((m.x >> hbit) & 0x01010101u) << 2);
  const uint v1 = ((q.y >> (2u * j)) & 0x03030303u) | (((m.y >> hbit) & 0x01010101u) << 2);
  w[0] = d * (bytes_f(v0) - 4.0);
  w[1] = d * (bytes_f(v1) - 4.0);
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
#define UNIT 8
uint unit_pos(uint u, uint v) { return 8u * u + 4u * v; }
#define HAS_UNIT_RAW
#if defined(TYPE_Q5_K)
#define RAW_WORDS 8
#else
#define RAW_WORDS 6
#endif
void unit_raw(uint off, uint u, out uint r[RAW_WORDS]) {
  const uint g = u >> 2;
  const uvec4 hd = wq4[off >> 4];  // d|dmin, then the 12 scale bytes
  const uvec2 q = wq2[(off + QS_OFF + 32u * (g >> 1) + 8u * (u & 3u)) >> 3];
  r[0] = hd.x;
  r[1] = hd.y;
  r[2] = hd.z;
  r[3] = hd.w;
  r[4] = q.x;
  r[5] = q.y;
#if defined(TYPE_Q5_K)
  const uvec2 qh = wq2[(off + 16u + 8u * (u & 3u)) >> 3];
  r[6] = qh.x;
  r[7] = qh.y;
#endif
}
// Unit u's scale and min (d * sc, dmin * mn) and its 8 codes, as the bytes of q[0] and q[1].
vec2 kquant_unit(uint u, uint r[RAW_WORDS], out uint q[2]) {
  const uint g = u >> 2;  // group 0..7: nibble plane g & 1 of qs[32 (g / 2) ..]
  const uint k = 8u * (g & 3u);
  uint sc, mn;
  if (g < 4u) {
    sc = (r[1] >> k) & 63u;
    mn = (r[2] >> k) & 63u;
  } else {
    sc = ((r[3] >> k) & 15u) | ((((r[1] >> k) >> 6) & 3u) << 4);
    mn = (((r[3] >> k) >> 4) & 15u) | ((((r[2] >> k) >> 6) & 3u) << 4);
  }
  const uint shift = 4u * (g & 1u);
  q[0] = (r[4] >> shift) & 0x0F0F0F0Fu;
  q[1] = (r[5] >> shift) & 0x0F0F0F0Fu;
#if defined(TYPE_Q5_K)
  q[0] |= ((r[6] >> g) & 0x01010101u) << 4;
  q[1] |= ((r[7] >> g) & 0x01010101u) << 4;
#endif
  const vec2 dm = unpackHalf2x16(r[0]);
  return vec2(dm.x * float(sc), dm.y * float(mn));
}
void unit_decode(uint off, uint u, uint r[RAW_WORDS], out vec4 w[UNIT / 4]) {
  uint q[2];
  const vec2 dm = kquant_unit(u, r, q);
  w[0] = dm.x * bytes_f(q[0]) - dm.y;
  w[1] = dm.x * bytes_f(q[1]) - dm.y;
}
#ifdef DEQUANT_F16
void unit_decode_f16(uint off, uint u, uint r[RAW_WORDS], out uvec2 h[UNIT / 4]) {
  uint q[2];
  const vec2 dm = kquant_unit(u, r, q);
  const f16vec4 d = f16vec4(to_f16_clamped(dm.x));
  const f16vec4 m = f16vec4(-to_f16_clamped(dm.y));
  const f16vec4 bias = f16vec4(float16_t(1024.0));
  h[0] = pack_f16vec4(fma(bytes_biased_f16(q[0]) - bias, d, m));
  h[1] = pack_f16vec4(fma(bytes_biased_f16(q[1]) - bias, d, m));
}
#endif

#elif defined(TYPE_Q6_K)
#define QK 256u
#define QBYTES 210u
#define UNIT 8
uint unit_pos(uint u, uint v) { return 8u * u + 4u * v; }
#define HAS_UNIT_RAW
#define RAW_WORDS 6
// Offsets of unit u's low and high bits within the block's body (repacked_body).
uint q6k_ql_off(uint u) { return 64u * (u >> 4) + 32u * ((u >> 2) & 1u) + 8u * (u & 3u); }
uint q6k_qh_off(uint u) { return 128u + 32u * (u >> 4) + 8u * (u & 3u); }
void unit_raw(uint off, uint u, out uint r[RAW_WORDS]) {
  const uint body = repacked_body(off);
  const uvec2 ql = wq2[(body + q6k_ql_off(u)) >> 3], qh = wq2[(body + q6k_qh_off(u)) >> 3];
  r[0] = ql.x;
  r[1] = ql.y;
  r[2] = qh.x;
  r[3] = qh.y;
  r[4] = wq[(body + 192u + (u >> 1)) >> 2];
  r[5] = wq[repacked_scale_off(off) >> 2];
}
// Unit u's scale (d * the sub-block's signed scale) and its 8 six-bit codes (0..63, the offset of
// 32 not yet taken), as the bytes of q[0] and q[1].
float q6k_unit(uint off, uint u, uint r[RAW_WORDS], out uint q[2]) {
  const uint g = u >> 2, qq = g & 3u;
  const uint sc = (r[4] >> (((u >> 1) & 3u) << 3)) & 0xFFu;  // the body is 16-byte aligned
  const uint ls = 4u * (qq >> 1), hs = 2u * qq;
  q[0] = ((r[0] >> ls) & 0x0F0F0F0Fu) | (((r[2] >> hs) & 0x03030303u) << 4);
  q[1] = ((r[1] >> ls) & 0x0F0F0F0Fu) | (((r[3] >> hs) & 0x03030303u) << 4);
  return shift_f16_a2(repacked_scale_off(off), r[5]) * float(int(sc << 24) >> 24);
}
void unit_decode(uint off, uint u, uint r[RAW_WORDS], out vec4 w[UNIT / 4]) {
  uint q[2];
  const float d = q6k_unit(off, u, r, q);
  w[0] = d * (bytes_f(q[0]) - 32.0);
  w[1] = d * (bytes_f(q[1]) - 32.0);
}
#ifdef DEQUANT_F16
void unit_decode_f16(uint off, uint u, uint r[RAW_WORDS], out uvec2 h[UNIT / 4]) {
  uint q[2];
  const f16vec4 d = f16vec4(to_f16_clamped(q6k_unit(off, u, r, q)));
  const f16vec4 bias = f16vec4(float16_t(1056.0));  // 1024 + the codes' offset of 32
  h[0] = pack_f16vec4((bytes_biased_f16(q[0]) - bias) * d);
  h[1] = pack_f16vec4((bytes_biased_f16(q[1]) - bias) * d);
}
#endif

#elif defined(TYPE_IQ4_XS)
#define QK 256u
#define QBYTES 136u
#define UNIT 8
// Window g = u / 4 of 32: bytes qs[16 g + 4 (u % 4) ..] hold elements 32 g + 4 (u % 4) + i
// (low nibbles) and 32 g + 16 + 4 (u % 4) + i (high nibbles).
uint unit_pos(uint u, uint v) { return 32u * (u >> 2) + 4u * (u & 3u) + 16u * v; }
void dequant_unit(uint off, uint u, out vec4 w[UNIT / 4]) {
  const uint g = u >> 2;
  const uvec2 hd = wq2[off >> 3];  // d | scales_h << 16, scales_l
  const uint ls = ((hd.y >> (4u * g)) & 15u) | (((hd.x >> (16u + 2u * g)) & 3u) << 4);
  const float d = unpackHalf2x16(hd.x).x * (float(ls) - 32.0);
  const uint q = wq[(off >> 2) + 2u + u];
  w[0] = d * iq4nl_f(q);
  w[1] = d * iq4nl_f(q >> 4);
}

#else
#error "dequant_weights.glsl: define one TYPE_* weight type"
#endif

#ifdef HAS_UNIT_RAW
void dequant_unit(uint off, uint u, out vec4 w[UNIT / 4]) {
  uint r[RAW_WORDS];
  unit_raw(off, u, r);
  unit_decode(off, u, r, w);
}
#endif
