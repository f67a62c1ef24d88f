// Integer decoders for the int8-dot matvec (matvec.comp with INT_DOT): a 32-weight group of a
// weight block as 8 words of packed signed bytes plus the scales that turn their integer dot
// products with a q8 activation block (quantize_q8.comp: int8 values q, scale dx, sum
// sx = dx * sum(q)) into the float result:
//
//   sum_i w_i x_i = dx * (s.x * dot(q[0..3], qx[0..3]) + s.y * dot(q[4..7], qx[4..7])) + s.z * sx
//
// s.x/s.y are the scales of the group's two halves (equal except for Q6_K's 16-weight
// sub-blocks); s.z carries the constant offset of the weights (Q4_0's -8, K-quants' minimum).
// QGROUP_ONE_SCALE (s.x == s.y) and QGROUP_OFFSET (s.z != 0) tell the kernels which terms the
// type has, so that a group's product costs fewer float ops: at several activation vectors a
// step is bound by this arithmetic, not by the weights' bytes.
//
//   void qgroup(uint off, uint g, out uint q[8], out vec3 s)
//           group g (of QK / 32) of the block at byte offset `off`.
//
// The dot products are int8_dot.glsl's dot4 (SPIR-V's OpSDotAccSatKHR on 4 packed bytes), which
// needs the device's shaderIntegerDotProduct feature. Accumulators never come near saturation
// (8 x 4 x 127 x 127 per group).

#include "dequant_weights.glsl"
#include "int8_dot.glsl"

#if !defined(TYPE_Q6_K)
#define QGROUP_ONE_SCALE
#endif
#if defined(TYPE_Q4_0) || defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
#define QGROUP_OFFSET
#endif

#if defined(TYPE_Q8_0)
void qgroup(uint off, uint g, out uint q[8], out vec3 s) {
  const float d = load_f16_a2(repacked_scale_off(off));
  const uint i = repacked_body(off) >> 4;
  const uvec4 a = wq4[i], b = wq4[i + 1u];
  q = uint[8](a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w);
  s = vec3(d, d, 0.0);
}

#elif defined(TYPE_Q4_0)
void qgroup(uint off, uint g, out uint q[8], out vec3 s) {
  const float d = load_f16_a2(off);
  // Byte i holds element i (low nibble) and element i + 16 (high nibble).
  const uint i = (off + 2u) >> 2;
  const uint sh = ((off + 2u) & 2u) << 3;
  uint prev = wq[i];
  [[unroll]] for (uint j = 0u; j < 4u; ++j) {
    const uint next = wq[i + j + 1u];
    const uint b = (prev >> sh) | ((next << 1u) << (31u - sh));
    q[j] = b & 0x0F0F0F0Fu;
    q[j + 4u] = (b >> 4) & 0x0F0F0F0Fu;
    prev = next;
  }
  s = vec3(d, d, -8.0 * d);
}

#elif defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
void qgroup(uint off, uint g, out uint q[8], out vec3 s) {
  const uvec4 hd = wq4[off >> 4];  // d|dmin, then the 12 scale bytes
  const uint k = 8u * (g & 3u);
  uint sc, mn;
  if (g < 4u) {
    sc = (hd.y >> k) & 63u;
    mn = (hd.z >> k) & 63u;
  } else {
    sc = ((hd.w >> k) & 15u) | ((((hd.y >> k) >> 6) & 3u) << 4);
    mn = (((hd.w >> k) >> 4) & 15u) | ((((hd.z >> k) >> 6) & 3u) << 4);
  }
  const vec2 dm = unpackHalf2x16(hd.x);
  // Group g is nibble plane g & 1 of the 32 bytes qs[32 (g / 2) ..].
  const uint qi = (off + QS_OFF + 32u * (g >> 1)) >> 4;
  const uvec4 a = wq4[qi], b = wq4[qi + 1u];
  const uint shift = 4u * (g & 1u);
  q[0] = (a.x >> shift) & 0x0F0F0F0Fu;
  q[1] = (a.y >> shift) & 0x0F0F0F0Fu;
  q[2] = (a.z >> shift) & 0x0F0F0F0Fu;
  q[3] = (a.w >> shift) & 0x0F0F0F0Fu;
  q[4] = (b.x >> shift) & 0x0F0F0F0Fu;
  q[5] = (b.y >> shift) & 0x0F0F0F0Fu;
  q[6] = (b.z >> shift) & 0x0F0F0F0Fu;
  q[7] = (b.w >> shift) & 0x0F0F0F0Fu;
#if defined(TYPE_Q5_K)
  // The fifth bit of element l is bit g of qh[l].
  const uvec4 ha = wq4[(off >> 4) + 1u], hb = wq4[(off >> 4) + 2u];
  q[0] |= ((ha.x >> g) & 0x01010101u) << 4;
  q[1] |= ((ha.y >> g) & 0x01010101u) << 4;
  q[2] |= ((ha.z >> g) & 0x01010101u) << 4;
  q[3] |= ((ha.w >> g) & 0x01010101u) << 4;
  q[4] |= ((hb.x >> g) & 0x01010101u) << 4;
  q[5] |= ((hb.y >> g) & 0x01010101u) << 4;
  q[6] |= ((hb.z >> g) & 0x01010101u) << 4;
  q[7] |= ((hb.w >> g) & 0x01010101u) << 4;
#endif
  const float d = dm.x * float(sc);
  s = vec3(d, d, -dm.y * float(mn));
}

#elif defined(TYPE_Q6_K)
void qgroup(uint off, uint g, out uint q[8], out vec3 s) {
  // Elements 128 h + 32 qq + l: low nibble plane qq / 2 of ql[64 h + 32 (qq & 1) + l], high
  // bits 2 qq of qh[32 h + l]; 16-element sub-block scales sc[8 h + 2 qq], sc[8 h + 2 qq + 1].
  const uint h = g >> 2, qq = g & 3u;
  const uint body = repacked_body(off);
  const uint li = (body + 64u * h + 32u * (qq & 1u)) >> 4, hi = (body + 128u + 32u * h) >> 4;
  const uvec4 l0 = wq4[li], l1 = wq4[li + 1u], h0 = wq4[hi], h1 = wq4[hi + 1u];
  const uint ql[8] = uint[8](l0.x, l0.y, l0.z, l0.w, l1.x, l1.y, l1.z, l1.w);
  const uint qh[8] = uint[8](h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w);
  const uint ls = 4u * (qq >> 1), hs = 2u * qq;
  [[unroll]] for (uint j = 0u; j < 8u; ++j) {
    const uint v = ((ql[j] >> ls) & 0x0F0F0F0Fu) | (((qh[j] >> hs) & 0x03030303u) << 4);
    // v - 32 in each byte without borrows: flip bit 5, and set bits 6-7 where it was clear.
    q[j] = v ^ 0x20202020u ^ ((((~v) >> 5) & 0x01010101u) * 0xC0u);
  }
  // The two scale bytes at body + 192 + 8 h + 2 qq: the body is 16-byte aligned.
  const uint sc = (wq[(body + 192u + 8u * h + 2u * qq) >> 2] >> (16u * (qq & 1u))) & 0xFFFFu;
  const float d = load_f16_a2(repacked_scale_off(off));
  s = vec3(d * float(int(sc << 24) >> 24), d * float(int(sc << 16) >> 24), 0.0);
}

#else
#error "no int8-dot decoder for this weight type"
#endif
