// Mamba-2's selective scan on the CPU (runtime::SsmScanSpec; shaders/ssm_scan.comp has the same
// semantics): one head of one sequence's tokens of a step at a time, in order, starting from the
// sequence's carried state. Plain float loops in the order ggml's CPU backend computes them.
#pragma once

#include <cstdint>

#include "engine/cpu/delta_net.h"

namespace vkllm::cpu {

struct Mamba2HeadArgs {
  SeqRows xbc;  // the sequence's conv output x | B | C rows
  SeqRows dt;   // raw time steps, n_head per token
  SeqRows out;  // n_head x head_dim per token
  uint32_t n_head = 0, head_dim = 0, n_group = 0, d_state = 0;
  float dt_bias = 0.f, a = 0.f, d = 0.f;  // this head's Weight::SsmDt, SsmA and SsmD values
};

// Head h's scan over n_tokens tokens; state holds its head_dim rows of d_state floats (row i at
// i * d_state), zeroed first when `fresh`.
void mamba2_scan_head(const Mamba2HeadArgs& a, uint32_t h, float* state, uint32_t n_tokens,
                      bool fresh);

}  // namespace vkllm::cpu
