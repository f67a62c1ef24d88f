// The CPU backend's mixture-of-experts FFN (StepBackend::moe_ffn): the router product, routing
// (cpu::moe_route), then expert by expert the tokens routed to it, gathered into rows, through
// its gate/up products, GLU and down product (the backend's quantized matmuls over the expert's
// slice of the stacked tensors), and each token's weighted sum in rank order. Experts no token
// chose are never read.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/cpu/isa.h"
#include "engine/cpu/quant_matmul.h"
#include "engine/cpu/thread_pool.h"
#include "engine/runtime/host_model.h"
#include "engine/runtime/step_backend.h"

namespace vkllm::runtime {

struct CpuMoeWeights {
  const HostTensor* router = nullptr;  // [n_embd, n_expert]
  const HostTensor* gate = nullptr;    // [n_embd, n_ff, n_expert]; null for MoeSpec::gated false
  const HostTensor* up = nullptr;
  const HostTensor* down = nullptr;  // [n_ff, n_embd, n_expert]
  // MoeSpec::biases (F32): [n_expert], then [n_ff, n_expert] twice and [n_embd, n_expert].
  const float* router_bias = nullptr;
  const float* gate_bias = nullptr;
  const float* up_bias = nullptr;
  const float* down_bias = nullptr;
  // MoeSpec::router_own_input: the router's input rows (router_x_stride apart, 0: packed);
  // MoeSpec::down_scales: [n_expert] F32 factors of the experts' outputs.
  const float* router_x = nullptr;
  uint32_t router_x_stride = 0;
  const float* down_scale = nullptr;
  // MoeSpec::select_bias: [n_expert] F32, added to the scores for the selection only.
  const float* select_bias = nullptr;
};

// Scratch that only grows, kept by the backend between steps.
struct CpuMoeScratch {
  std::vector<float> logits, weights, x, gate, up, act, down, pair_out;
  std::vector<uint32_t> ids, pairs;
};

// A MoE model whose expert tensors the CPU matmuls cannot take (type, layout) fails to load:
// throws std::runtime_error naming the tensor.
void check_cpu_moe_weights(const HostModel& model);

// x: n_tokens rows of n_embd (x_stride apart, 0: packed); out (the residual) gets the FFN added
// (MoeSpec::accumulate; else out is the FFN).
void cpu_moe_ffn(const MoeSpec& m, uint32_t n_tokens, const CpuMoeWeights& w, const float* x,
                 uint32_t x_stride, float* out, uint32_t out_stride, CpuMoeScratch& s,
                 cpu::ThreadPool& pool, cpu::MatmulWorkspace& ws, cpu::Isa isa);

}  // namespace vkllm::runtime
