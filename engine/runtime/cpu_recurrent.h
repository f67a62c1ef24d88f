// The CPU backend's recurrent-layer operations over a step (cpu_backend.cpp forwards to them):
// LFM2's short convolution, Qwen3.5's DeltaNet conv and recurrence and Mamba-2's scan
// (step_backend.h documents each), shared out over the pool by sequence and channel range or by
// sequence and value head. Each sequence's tokens run in order from its carried state
// (engine/cpu/short_conv.h, engine/cpu/delta_net.h), none read for a sequence that starts at
// position 0. A sequence whose states the step keeps (a speculative verification step) runs one
// token at a time, its state copied after each token but the last (the recurrent forms only).
#pragma once

#include <cstdint>
#include <span>

#include "engine/cpu/batch_view.h"
#include "engine/cpu/delta_net.h"
#include "engine/cpu/thread_pool.h"
#include "engine/kv/state_layout.h"
#include "engine/runtime/step_backend.h"

namespace vkllm::runtime {

// A step's recurrent states (kv::StateLayout over host memory).
struct CpuStepStates {
  const cpu::BatchView& batch;
  float* states = nullptr;
  const kv::StateLayout& layout;
  // Sequence s's state of a layer; throws std::logic_error for a layer without one.
  float* of(uint32_t s, uint32_t layer) const;
  // Where a layer's state after token t of sequence s is kept (the step's captured states:
  // kv::BatchSequence::capture_from), or nullptr when the step keeps none for it.
  float* after_token(uint32_t s, uint32_t layer, uint32_t t) const;
};

// Activation rows from the step's first token on (row t at p + t * stride).
void cpu_short_conv(const ShortConvSpec& c, cpu::SeqRows bcx, cpu::SeqRows out, const float* w,
                    const CpuStepStates& st, cpu::ThreadPool& pool);
// bias: the layer's Weight::SsmConv1dBias when c.bias, else nullptr.
void cpu_ssm_conv(const SsmConvSpec& c, cpu::SeqRows x, cpu::SeqRows out, const float* w,
                  const float* bias, const CpuStepStates& st, cpu::ThreadPool& pool);
struct CpuDeltaNetRows {
  cpu::SeqRows qkv, alpha, beta, out;
};
// dt, a: the layer's Weight::SsmDt and Weight::SsmA (one per value head). A sequence of at least
// chunk_min tokens (0: none) runs the chunked form (cpu::delta_net_head_chunked).
void cpu_delta_net(const DeltaNetSpec& d, const CpuDeltaNetRows& rows, const float* dt,
                   const float* a, const CpuStepStates& st, cpu::ThreadPool& pool,
                   uint32_t chunk_min);

// Mamba-2's scan, by sequence and head; dt, a, d: the layer's Weight::SsmDt, SsmA and SsmD.
// Sequences bringing at least chunk_min_tokens tokens take the chunked form
// (cpu::mamba2_scan_head).
struct CpuMamba2Rows {
  cpu::SeqRows xbc, dt, out;
};
void cpu_mamba2_scan(const SsmScanSpec& c, const CpuMamba2Rows& rows, const float* dt,
                     const float* a, const float* d, const CpuStepStates& st, cpu::ThreadPool& pool,
                     uint32_t chunk_min_tokens);

// Copies whole states between the live slots (`states`, kv::StateLayout) and `n_checkpoints`
// checkpoint slots of the same size (StepBackend::copy_states); throws std::out_of_range for a
// slot past either.
void cpu_copy_states(std::span<const StateCopy> copies, float* states, float* checkpoints,
                     const kv::StateLayout& layout, uint32_t n_checkpoints);

}  // namespace vkllm::runtime
