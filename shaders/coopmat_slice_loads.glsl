// How matmul_coopmat.comp brings one K slice of its weight and activation tiles into shared
// memory: item by item, batched (every load of a slice before any store) or software-pipelined
// (the raw words of a later slice in registers while this one multiplies); BATCHED_LOADS in the
// kernel picks one. Included by matmul_coopmat.comp after its tiles, buffers and pack_f16.

// Slice [k0, k0 + BK) of the tile into shared buffer `buf`; zeros beyond the matrix. Every load
// comes first, from addresses clamped into the matrix (no branch between them, so all are in
// flight at once), then the conversions and shared stores.
void load_slice_batched(uint k0, uint buf) {
  const uint tid = gl_LocalInvocationID.x;
  const uint threads = gl_WorkGroupSize.x;
  const uint m0 = gl_WorkGroupID.y * BM;
  const uint blocks_per_row = p.k / QK;
  const uint units = BK / uint(UNIT);

  uvec2 wp[W_ITEMS * uint(UNIT / 4)];
  [[unroll]] for (uint i = 0u; i < W_ITEMS; ++i) {
    const uint t = min(tid + i * threads, W_UNITS - 1u);
    const uint nl = t / units;
    const uint u = k0 / uint(UNIT) + t % units;
    const uint kb = u / (QK / uint(UNIT));
    const uint n = gl_WorkGroupID.x * BN + nl;
    const bool valid = n < p.n_rows && kb * QK < p.k;
    const uint at = min(n, p.n_rows - 1u) * blocks_per_row + min(kb, blocks_per_row - 1u);
    vec4 w[UNIT / 4];
    dequant_unit(W_OFF + at * QBYTES, u % (QK / uint(UNIT)), w);
    [[unroll]] for (uint v = 0u; v < uint(UNIT / 4); ++v)
      wp[i * uint(UNIT / 4) + v] = valid ? pack_f16(w[v]) : uvec2(0u);
  }
  uvec2 xp[X_F16 != 0u ? 2u * X8_ITEMS : X4_ITEMS];
  if (X_F16 != 0u) {
    const uint k_pad = (p.k + 7u) / 8u * 8u;
    [[unroll]] for (uint i = 0u; i < X8_ITEMS; ++i) {
      const uint t = min(tid + i * threads, X8_UNITS - 1u);
      const uint m = m0 + t / (BK / 8u);
      const uint kk = k0 + 8u * (t % (BK / 8u));
      const uint at = p.x_off + X_ROW(min(m, N_COLS - 1u)) * p.x_stride + min(kk, k_pad - 8u);
      const uvec4 h = m < N_COLS && kk < p.k ? xh[at >> 3] : uvec4(0u);
      xp[2u * i] = h.xy;
      xp[2u * i + 1u] = h.zw;
    }
  } else {
    [[unroll]] for (uint i = 0u; i < X4_ITEMS; ++i) {
      const uint t = min(tid + i * threads, X4_UNITS - 1u);
      const uint m = m0 + t / (BK / 4u);
      const uint kk = k0 + 4u * (t % (BK / 4u));
      const uint at = p.x_off + X_ROW(min(m, N_COLS - 1u)) * p.x_stride + min(kk, p.k - 4u);
      const vec4 xs = xv[at >> 2];
      xp[i] = m < N_COLS && kk < p.k ? pack_f16(xs) : uvec2(0u);
    }
  }

  [[unroll]] for (uint i = 0u; i < W_ITEMS; ++i) {
    const uint t = tid + i * threads;
    if (W_UNITS % threads == 0u || t < W_UNITS) {
      const uint nl = t / units;
      const uint u = k0 / uint(UNIT) + t % units;
      const uint kb = u / (QK / uint(UNIT));
      [[unroll]] for (uint v = 0u; v < uint(UNIT / 4); ++v) {
        const uint kl = kb * QK + unit_pos(u % (QK / uint(UNIT)), v) - k0;
        w_sh[buf * BN * SROW + nl * SROW + kl / 4u] = wp[i * uint(UNIT / 4) + v];
      }
    }
  }
  if (X_F16 != 0u) {
    [[unroll]] for (uint i = 0u; i < X8_ITEMS; ++i) {
      const uint t = tid + i * threads;
      if (X8_UNITS % threads == 0u || t < X8_UNITS) {
        const uint at = buf * BM * SROW + (t / (BK / 8u)) * SROW + 2u * (t % (BK / 8u));
        x_sh[at] = xp[2u * i];
        x_sh[at + 1u] = xp[2u * i + 1u];
      }
    }
  } else {
    [[unroll]] for (uint i = 0u; i < X4_ITEMS; ++i) {
      const uint t = tid + i * threads;
      if (X4_UNITS % threads == 0u || t < X4_UNITS)
        x_sh[buf * BM * SROW + (t / (BK / 4u)) * SROW + t % (BK / 4u)] = xp[i];
    }
  }
}

// The same slice item by item (BATCHED_LOADS = 0).
void load_slice_items(uint k0, uint buf) {
  const uint tid = gl_LocalInvocationID.x;
  const uint threads = gl_WorkGroupSize.x;
  const uint n0 = gl_WorkGroupID.x * BN;
  const uint m0 = gl_WorkGroupID.y * BM;
  const uint blocks_per_row = p.k / QK;

  // Weights: BN rows x BK/UNIT decode units; neighbouring invocations take neighbouring units of
  // one row, i.e. neighbouring bytes of its block.
  const uint units = BK / uint(UNIT);
  for (uint t = tid; t < BN * units; t += threads) {
    const uint nl = t / units;
    const uint u = k0 / uint(UNIT) + t % units;  // unit index along the row
    const uint kb = u / (QK / uint(UNIT));
    const uint ub = u % (QK / uint(UNIT));
    const uint n = gl_WorkGroupID.x * BN + nl;
    vec4 w[UNIT / 4];
    if (n < p.n_rows && kb * QK < p.k) {
      dequant_unit(W_OFF + (n * blocks_per_row + kb) * QBYTES, ub, w);
    } else {
      [[unroll]] for (uint v = 0u; v < uint(UNIT / 4); ++v) w[v] = vec4(0.0);
    }
    [[unroll]] for (uint v = 0u; v < uint(UNIT / 4); ++v) {
      const uint kl = kb * QK + unit_pos(ub, v) - k0;
      w_sh[buf * BN * SROW + nl * SROW + kl / 4u] = pack_f16(w[v]);
    }
  }

  if (X_F16 != 0u) {
    // Activations already f16: BM tokens x BK, BK / 8 invocations per token row.
    for (uint t = tid; t < BM * (BK / 8u); t += threads) {
      const uint ml = t / (BK / 8u);
      const uint kq = t % (BK / 8u);
      const uint m = m0 + ml;
      const uint kk = k0 + 8u * kq;
      uvec4 h = uvec4(0u);
      if (m < N_COLS && kk < p.k) h = xh[(p.x_off + X_ROW(m) * p.x_stride + kk) >> 3];
      const uint at = buf * BM * SROW + ml * SROW + 2u * kq;
      x_sh[at] = h.xy;
      x_sh[at + 1u] = h.zw;
    }
    return;
  }
  // Activations: BM tokens x BK, BK / 4 invocations per token row.
  for (uint t = tid; t < BM * (BK / 4u); t += threads) {
    const uint ml = t / (BK / 4u);
    const uint kq = t % (BK / 4u);
    const uint m = m0 + ml;
    const uint kk = k0 + 4u * kq;
    vec4 xs = vec4(0.0);
    if (m < N_COLS && kk < p.k) xs = xv[(p.x_off + X_ROW(m) * p.x_stride + kk) >> 2];
    x_sh[buf * BM * SROW + ml * SROW + kq] = pack_f16(xs);
  }
}

#ifdef HAS_UNIT_RAW
const bool PIPELINED = BATCHED_LOADS == 2u && X_F16 != 0u;
uint w_raw[W_ITEMS * uint(RAW_WORDS)];  // the next slice's weight words ...
uvec4 x_raw[X8_ITEMS];                  // ... and f16 activations, in flight

// Weight unit `t` of the slice at k0: its block's byte offset (clamped into the matrix), the unit
// within the block, and whether it lies inside the matrix.
uint slice_unit(uint t, uint k0, out uint ub, out bool valid) {
  const uint units = BK / uint(UNIT);
  const uint blocks_per_row = p.k / QK;
  const uint u = k0 / uint(UNIT) + t % units;
  const uint kb = u / (QK / uint(UNIT));
  const uint n = gl_WorkGroupID.x * BN + t / units;
  ub = u % (QK / uint(UNIT));
  valid = n < p.n_rows && kb * QK < p.k;
  return W_OFF +
         (min(n, p.n_rows - 1u) * blocks_per_row + min(kb, blocks_per_row - 1u)) * QBYTES;
}

// Only the loads of the slice at k0, into w_raw / x_raw (addresses clamped, nothing checked).
void fetch_slice(uint k0) {
  const uint tid = gl_LocalInvocationID.x;
  [[unroll]] for (uint i = 0u; i < W_ITEMS; ++i) {
    uint ub;
    bool valid;
    const uint off = slice_unit(min(tid + i * gl_WorkGroupSize.x, W_UNITS - 1u), k0, ub, valid);
    uint r[RAW_WORDS];
    unit_raw(off, ub, r);
    [[unroll]] for (uint j = 0u; j < uint(RAW_WORDS); ++j) w_raw[i * uint(RAW_WORDS) + j] = r[j];
  }
  const uint k_pad = (p.k + 7u) / 8u * 8u;
  [[unroll]] for (uint i = 0u; i < X8_ITEMS; ++i) {
    const uint t = min(tid + i * gl_WorkGroupSize.x, X8_UNITS - 1u);
    const uint m = gl_WorkGroupID.y * BM + t / (BK / 8u);
    const uint kk = k0 + 8u * (t % (BK / 8u));
    x_raw[i] = xh[(p.x_off + X_ROW(min(m, N_COLS - 1u)) * p.x_stride + min(kk, k_pad - 8u)) >> 3];
  }
}

// Decodes what fetch_slice(k0) loaded into shared buffer `buf`, zeros beyond the matrix.
void store_slice(uint k0, uint buf) {
  const uint tid = gl_LocalInvocationID.x;
  const uint units = BK / uint(UNIT);
  [[unroll]] for (uint i = 0u; i < W_ITEMS; ++i) {
    const uint t = tid + i * gl_WorkGroupSize.x;
    if (W_UNITS % gl_WorkGroupSize.x == 0u || t < W_UNITS) {
      uint ub;
      bool valid;
      const uint off = slice_unit(t, k0, ub, valid);
      uint r[RAW_WORDS];
      [[unroll]] for (uint j = 0u; j < uint(RAW_WORDS); ++j) r[j] = w_raw[i * uint(RAW_WORDS) + j];
      uvec2 h[UNIT / 4];
      if (DECODE_F16) {
        unit_decode_f16(off, ub, r, h);
      } else {
        vec4 w[UNIT / 4];
        unit_decode(off, ub, r, w);
        [[unroll]] for (uint v = 0u; v < uint(UNIT / 4); ++v) h[v] = pack_f16(w[v]);
      }
      const uint kb = (k0 / uint(UNIT) + t % units) / (QK / uint(UNIT));
      [[unroll]] for (uint v = 0u; v < uint(UNIT / 4); ++v) {
        const uint kl = kb * QK + unit_pos(ub, v) - k0;
        w_sh[buf * BN * SROW + (t / units) * SROW + kl / 4u] = valid ? h[v] : uvec2(0u);
      }
    }
  }
  [[unroll]] for (uint i = 0u; i < X8_ITEMS; ++i) {
    const uint t = tid + i * gl_WorkGroupSize.x;
    if (X8_UNITS % gl_WorkGroupSize.x == 0u || t < X8_UNITS) {
      const uint m = gl_WorkGroupID.y * BM + t / (BK / 8u);
      const uint kk = k0 + 8u * (t % (BK / 8u));
      const uvec4 h = m < N_COLS && kk < p.k ? x_raw[i] : uvec4(0u);
      const uint at = buf * BM * SROW + (t / (BK / 8u)) * SROW + 2u * (t % (BK / 8u));
      x_sh[at] = h.xy;
      x_sh[at + 1u] = h.zw;
    }
  }
}
#else
const bool PIPELINED = false;
void fetch_slice(uint k0) {}
void store_slice(uint k0, uint buf) {}
#endif

void load_slice(uint k0, uint buf) {
  if (BATCHED_LOADS != 0u)
    load_slice_batched(k0, buf);
  else
    load_slice_items(k0, buf);
}

// In iteration s of the walk over `slices` slices from k_begin: slice s + 1 into buffer `buf`;
// pipelined, from the words fetched one iteration earlier, and slice s + 2's loads issued.
void next_slice(uint k_begin, uint s, uint slices, uint buf) {
  if (PIPELINED) {
    if (s + 1u < slices) store_slice(k_begin + (s + 1u) * BK, buf);
    if (s + 2u < slices) fetch_slice(k_begin + (s + 2u) * BK);
  } else if (s + 1u < slices) {
    load_slice(k_begin + (s + 1u) * BK, buf);
  }
}
