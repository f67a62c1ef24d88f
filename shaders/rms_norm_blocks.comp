#version 450
// RMSNorm for latency: rms_norm.comp's arithmetic (and its optional residual add and q8 output),
// but each invocation owns one block of 32 elements of the row and keeps it in registers, so a
// row costs one round of independent loads (x, r and w at once), one reduction and one round of
// stores, instead of loops that go back to memory for every pass. A decode step's norms are a
// single row on one workgroup, so their time is latency, not bandwidth.
// Needs n a multiple of 32, n / 32 <= the workgroup size, and the strides multiples of 4.
// F16_OUT: y is also written as f16 rows of n halves (binding 4), the tensor-core GEMM's input
// (to_f16.comp's values).
// Gate (flags bit 2, not with the residual add): y *= silu(g) after the weight, g read from
// binding 1 at g_off + (row / g_group) * g_stride + (row % g_group) * n: Qwen3.5's gated norm
// over each value head of the DeltaNet output, one dispatch instead of a norm, a gate pass and
// (with Q8_OUT) a quantize pass, each behind its own barrier.
// Post-add (flags bit 3, not with the residual add or the gate): y = r + the normed row, r read
// from binding 1 at x's offsets (y may be r): a post-norm's residual in the same pass.
// CHAIN (with the post-add): the next pre-norm in the same pass. y = (r + the normed row), times
// the scalar s[0] where flags bit 4 says so (Gemma 4's layer output scale), is the new residual;
// z = y / rms(y) * w2 (bindings 5, 6; the q8 or f16 copy is z's): a post-norm, its residual and
// the norm of the next block (Gemma's post-attention norm then pre-FFN norm, a layer's last
// post-norm then the next layer's input norm) in one dispatch instead of two or three, each
// behind its own barrier.

#extension GL_EXT_control_flow_attributes : enable
#include "reduce.glsl"
#ifdef Q8_OUT
#include "q8_block.glsl"
#endif
#ifdef F16_OUT
layout(std430, binding = 4) writeonly buffer Y16 { uvec4 y16[]; };
#endif

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer X { vec4 x[]; };
layout(std430, binding = 1) readonly buffer R { vec4 r[]; };
layout(std430, binding = 2) readonly buffer W { vec4 w[]; };
layout(std430, binding = 3) writeonly buffer Y { vec4 y[]; };
#ifdef CHAIN
layout(std430, binding = 5) readonly buffer W2 { vec4 w2[]; };
layout(std430, binding = 6) writeonly buffer Z { vec4 z[]; };
layout(std430, binding = 7) readonly buffer S { float out_scale[]; };
#endif

layout(push_constant) uniform Params {
  uint n;         // row length
  uint n_rows;
  uint x_stride;  // elements between rows of x (and r)
  uint y_stride;  // elements between rows of y
  float eps;
  uint flags;     // bit 0: add r into x first (and store the sum in x); bit 1: no weight
                  // multiply; bit 2: the gate (r holds g); bit 3: y = r + normed; bit 4
                  // (CHAIN): y *= s[0]
  uint g_off, g_stride, g_group;  // elements; multiples of 4
} p;

void main() {
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= p.n_rows) return;  // uniform across the workgroup
  const uint b = gl_LocalInvocationIndex;
  const uint nb = p.n / 32u;
  const bool mine = b < nb;
  const bool add = (p.flags & 1u) != 0u;
  const bool mul = (p.flags & 2u) == 0u;
  const uint xb = (row * p.x_stride + 32u * b) / 4u;
  vec4 v[8];
  vec4 s[8];
  float ss = 0.0;
  if (mine) {
    [[unroll]] for (uint i = 0u; i < 8u; ++i) {
      v[i] = x[xb + i];
      s[i] = mul ? w[8u * b + i] : vec4(1.0);
    }
    if (add) {
      [[unroll]] for (uint i = 0u; i < 8u; ++i) {
        v[i] += r[xb + i];
        x[xb + i] = v[i];
      }
    }
    [[unroll]] for (uint i = 0u; i < 8u; ++i) ss += dot(v[i], v[i]);
  }
  ss = workgroup_sum(ss);
#ifndef CHAIN
  if (!mine) return;
#endif
  const float inv = inversesqrt(ss / float(p.n) + p.eps);
  const uint yb = (row * p.y_stride + 32u * b) / 4u;
#ifdef CHAIN
  // The new residual, then its norm: every invocation joins the second reduction.
  const float scale = (p.flags & 16u) != 0u ? out_scale[0] : 1.0;
  float ss2 = 0.0;
  if (mine) {
    [[unroll]] for (uint i = 0u; i < 8u; ++i) {
      v[i] = (v[i] * inv * s[i] + r[xb + i]) * scale;
      y[yb + i] = v[i];
      ss2 += dot(v[i], v[i]);
    }
  }
  ss2 = workgroup_sum(ss2);
  if (!mine) return;
  const float inv2 = inversesqrt(ss2 / float(p.n) + p.eps);
  [[unroll]] for (uint i = 0u; i < 8u; ++i) {
    v[i] = v[i] * inv2 * w2[8u * b + i];
    z[yb + i] = v[i];
  }
#else
  const bool gate = (p.flags & 4u) != 0u;
  const bool post_add = (p.flags & 8u) != 0u;
  const uint gb = (p.g_off + (row / p.g_group) * p.g_stride + (row % p.g_group) * p.n + 32u * b) / 4u;
  [[unroll]] for (uint i = 0u; i < 8u; ++i) {
    v[i] = v[i] * inv * s[i];
    if (gate) {
      const vec4 g = r[gb + i];
      v[i] *= g / (1.0 + exp(-g));
    }
    if (post_add) v[i] += r[xb + i];
    y[yb + i] = v[i];
  }
#endif
#ifdef Q8_OUT
  q8_store_block(row * nb + b, p.n_rows * nb, v);
#endif
#ifdef F16_OUT
  const uint hb = (row * p.n + 32u * b) / 8u;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    const vec4 a = clamp(v[2u * i], vec4(-65504.0), vec4(65504.0));
    const vec4 c = clamp(v[2u * i + 1u], vec4(-65504.0), vec4(65504.0));
    y16[hb + i] = uvec4(packHalf2x16(a.xy), packHalf2x16(a.zw), packHalf2x16(c.xy),
                        packHalf2x16(c.zw));
  }
#endif
}
