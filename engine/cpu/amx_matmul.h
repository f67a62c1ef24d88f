// The matrix-matrix products of prefill on AMX tiles (Isa::Amx): for each task's block of weight
// rows, the rows are dequantized once per call (engine/gguf), split into bf16 halves and
// multiplied against every token's activations with TDPBF16PS, f32 accumulation. The dequant
// is paid once per row per call, so from a few dozen tokens on the tile units' throughput
// (about 16x the AVX-512 FMAs') decides, for every weight type alike.
#pragma once

#include <cstdint>
#include <span>

#include "engine/cpu/quant_matmul.h"

namespace vkllm::cpu::detail {

// The fewest tokens for which matmul takes the AMX path for these products: below, the per-call
// dequant and split of every weight row cost more than the AVX-512 kernels' time. Measured with
// bench_cpu_matmul (2048 x 2048, one thread): AMX costs ~1.1 ms per call for quantized weights,
// ~1.5 ms for F16 (two halves to pack), and takes over at 16 tokens (Q8_0 1.05x faster, Q4_K
// 0.96x; 1.3x and 2x at 24 and 32 tokens) and at 32 for F16 (1.26x; even at 24). Types without
// an AVX-512 dequant kernel here (engine/gguf's scalar one, ~15 ms per call) wait until ~192
// tokens (Q5_K before its kernel: 0.76x at 128 tokens, 2.3x at 512).
uint32_t amx_min_tokens(std::span<const Product> products);

// matmul's contract (quant_matmul.h) for products the caller has validated; needs Isa::Amx.
void amx_matmul(std::span<const Product> products, const float* x, uint64_t x_stride, uint32_t n,
                ThreadPool& pool, MatmulWorkspace& ws);

}  // namespace vkllm::cpu::detail
