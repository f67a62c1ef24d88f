// Mamba-2's selective scan on the CPU (runtime::SsmScanSpec; shaders/ssm_scan.comp and
// ssm_scan_chunked.comp have the same semantics): one head of one sequence's tokens of a step at
// a time, starting from the sequence's carried state. Two forms with the same result up to
// rounding: the recurrence token by token (plain float loops in the order ggml's CPU backend
// computes them; decode and short prefills), and the chunked state-space-duality form of the
// Mamba-2 paper for sequences bringing at least chunk_min_tokens tokens: per chunk of
// kMamba2Chunk tokens, the outputs from the carried state and from the chunk's own tokens as
// small matrix products, then the state carried over the whole chunk at once.
#pragma once

#include <cstdint>

#include "engine/cpu/delta_net.h"

namespace vkllm::cpu {

// Tokens per chunk of the chunked form.
constexpr uint32_t kMamba2Chunk = 64;
// Fewest tokens of a sequence's step that take the chunked form: at Granite 4.0-H Micro's shape
// the chunked form took 0.89 ms for 3 tokens against the recurrence's 0.98, 0.77 against 0.66 for
// 2 (docs/engine.md's Mamba-2 notes).
constexpr uint32_t kMamba2ChunkMinTokens = 3;

struct Mamba2HeadArgs {
  SeqRows xbc;  // the sequence's conv output x | B | C rows
  SeqRows dt;   // raw time steps, n_head per token
  SeqRows out;  // n_head x head_dim per token
  uint32_t n_head = 0, head_dim = 0, n_group = 0, d_state = 0;
  float dt_bias = 0.f, a = 0.f, d = 0.f;  // this head's Weight::SsmDt, SsmA and SsmD values
  uint32_t chunk_min_tokens = kMamba2ChunkMinTokens;  // tests force either form with it
};

// Head h's scan over n_tokens tokens; state holds its head_dim rows of d_state floats (row i at
// i * d_state), zeroed first when `fresh`.
void mamba2_scan_head(const Mamba2HeadArgs& a, uint32_t h, float* state, uint32_t n_tokens,
                      bool fresh);

}  // namespace vkllm::cpu
