// The KV positions an attention workgroup reads and which of them each query sees, shared by
// attention.comp and attention_coopmat.comp. Included after kv_meta.glsl and the push constants
// (n_tokens, window, n_splits, non_causal, chunk) and BC, the positions per KV tile.

// The first position of the workgroup's sequence's open span (kv_meta.glsl's seq_open), set by
// kv_tile_range: queries from there on see every later key up to kv_len too (an image's tokens).
uint open_from = 0xFFFFFFFFu;

// Whether the key at position kp is visible to the query at position qp (kv_hi: the end of the
// workgroup's KV range): causal unless non_causal, within the sliding window if there is one
// (qp - kp < window; without the causal mask a symmetric one, |qp - kp| < window). A query in
// the open span sees the later keys whatever the window, as llama.cpp's causal-off decode does.
// Chunked attention (Llama 4) hides the keys before the query's chunk, qp - qp % chunk.
bool key_visible(uint kp, uint qp, uint kv_hi) {
  if (kp >= kv_hi) return false;
  if (kp <= qp) {
    return (p.window == 0u || qp - kp < p.window) && (p.chunk == 0u || kp >= qp - qp % p.chunk);
  }
  if (qp >= open_from) return true;
  return (p.non_causal & 1u) != 0u && (p.window == 0u || kp - qp < p.window);
}

// The tiles [tile_begin, tile_end) of BC positions that split `split` of this workgroup walks for
// its nq query tokens from t0 (kv_len: the sequence's cached length): up to the last query's
// position (or the whole sequence without the causal mask), from the first query's window start,
// then this split's share, in whole tiles.
void kv_tile_range(uint nq, uint t0, uint kv_len, uint split, out uint kv_hi, out uint tile_begin,
                   out uint tile_end) {
  // non_causal's bit 1: this layer ignores the open spans (Gemma 4's global layers).
  open_from = (p.non_causal & 2u) != 0u ? 0xFFFFFFFFu
                                         : meta_seq_open(p.n_tokens, p.n_seqs,
                                                         meta_token_seq(p.n_tokens, t0));
  uint min_pos = 0xFFFFFFFFu, max_pos = 0u;
  for (uint i = 0u; i < nq; ++i) {
    const uint ps = meta_token_pos(p.n_tokens, t0 + i);
    min_pos = min(min_pos, ps);
    max_pos = max(max_pos, ps);
  }
  kv_hi = max_pos >= open_from  ? kv_len
          : (p.non_causal & 1u) == 0u ? min(kv_len, max_pos + 1u)
          : p.window > 0u     ? min(kv_len, max_pos + p.window)
                              : kv_len;
  uint kv_lo = (p.window > 0u && min_pos + 1u > p.window) ? min_pos + 1u - p.window : 0u;
  if (p.chunk > 0u) kv_lo = max(kv_lo, min_pos - min_pos % p.chunk);
  const uint first_tile = kv_lo / BC;
  const uint n_tiles = kv_hi > kv_lo ? (kv_hi + BC - 1u) / BC - first_tile : 0u;
  const uint per_split = (n_tiles + p.n_splits - 1u) / p.n_splits;
  tile_begin = first_tile + min(n_tiles, split * per_split);
  tile_end = first_tile + min(n_tiles, (split + 1u) * per_split);
}
