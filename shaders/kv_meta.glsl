// The per-step batch metadata every kernel touching the paged KV cache reads: one uint array
// (layout in engine/kv/kv_layout.h, built by kv::BatchMeta). With T tokens and S sequences:
//   [0, T)            token_seq     sequence index of each batch token
//   [T, 2T)           token_pos     absolute position of each batch token
//   [2T, 2T+S)        seq_table     offset of the sequence's block table in the tables area
//   [2T+S, 2T+2S)     seq_kv_len    context length of the sequence after this step
//   [2T+2S, 2T+3S)    seq_q_start   index of the sequence's first token in the batch
//   [2T+3S, 2T+4S)    seq_q_len     tokens of the sequence in this batch (contiguous)
//   [2T+4S, 2T+5S)    seq_state     recurrent-state slot of the sequence (0 without recurrent layers)
//   [2T+5S, 2T+6S)    seq_open      first position of the sequence's open span (0xFFFFFFFF: none);
//                                   queries from there on also see the keys after them
//   [2T+6S, 2T+7S)    seq_capture   first state slot keeping the state after each of the
//                                   sequence's tokens but the last (0: none; speculative steps)
//   [2T+7S, ...)      block tables  uint32 block ids; position p is in table[p / B], slot p % B
// Binding point: META_BINDING (define before including).

layout(std430, binding = META_BINDING) readonly buffer Meta { uint meta[]; };

uint meta_token_seq(uint n_tokens, uint t) { return meta[t]; }
uint meta_token_pos(uint n_tokens, uint t) { return meta[n_tokens + t]; }
uint meta_seq_table(uint n_tokens, uint n_seqs, uint s) {
  return 2u * n_tokens + 7u * n_seqs + meta[2u * n_tokens + s];
}
uint meta_seq_kv_len(uint n_tokens, uint n_seqs, uint s) {
  return meta[2u * n_tokens + n_seqs + s];
}
uint meta_seq_q_start(uint n_tokens, uint n_seqs, uint s) {
  return meta[2u * n_tokens + 2u * n_seqs + s];
}
uint meta_seq_q_len(uint n_tokens, uint n_seqs, uint s) {
  return meta[2u * n_tokens + 3u * n_seqs + s];
}
uint meta_seq_state(uint n_tokens, uint n_seqs, uint s) {
  return meta[2u * n_tokens + 4u * n_seqs + s];
}
uint meta_seq_open(uint n_tokens, uint n_seqs, uint s) {
  return meta[2u * n_tokens + 5u * n_seqs + s];
}
uint meta_seq_capture(uint n_tokens, uint n_seqs, uint s) {
  return meta[2u * n_tokens + 6u * n_seqs + s];
}
// Physical block holding position p of the sequence whose table starts at `table`.
uint meta_block(uint table, uint p, uint block_size) { return meta[table + p / block_size]; }
