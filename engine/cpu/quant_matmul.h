// Matrix products of quantized (or f16/bf16/f32) weights with float activations on the CPU: the
// CPU backend's linear layers, where nearly all of a forward's time goes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/cpu/isa.h"
#include "engine/cpu/thread_pool.h"
#include "engine/gguf/tensor_type.h"

namespace vkllm::cpu {

// A weight matrix as it lies in the GGUF file: `rows` rows of `cols` elements, each row a run of
// ggml blocks (engine/gguf/block_layouts.h), rows contiguous.
struct WeightView {
  gguf::TensorType type;
  const std::byte* data;
  uint64_t cols, rows;
};

// One output of a matmul call: y[t * y_stride + r] = (or +=, with accumulate) row r of w · x_t.
struct Product {
  const WeightView* w;
  float* y;
  uint64_t y_stride;
  bool accumulate;
};

// Scratch reused across calls: the activations quantized to 8 bits and per-thread row buffers.
// One per thread that calls matmul; it only grows.
class MatmulWorkspace {
 public:
  std::vector<std::byte>& buffer(size_t index) { return buffers_[index]; }
  std::vector<float>& scratch(unsigned thread) {
    if (thread >= scratch_.size()) scratch_.resize(thread + 1);
    return scratch_[thread];
  }
  void reserve_threads(unsigned threads) {
    if (scratch_.size() < threads) scratch_.resize(threads);
  }

 private:
  std::vector<std::byte> buffers_[3];
  std::vector<std::vector<float>> scratch_;
};

// Whether matmul has a kernel for weights of this type (every type the Vulkan matmuls take).
bool matmul_supports(gguf::TensorType type);

// For every product and every token t < n: y_t = W x_t over the product's rows, where x_t is
// x + t * x_stride (cols floats, the same cols for every product). The activations are quantized
// once per call for all products (8-bit blocks with per-block scales for the integer kernels),
// and the rows of all products are shared out over the pool together. Throws
// std::invalid_argument for an unsupported type, mismatched cols or a cols the type's block size
// does not divide.
void matmul(std::span<const Product> products, const float* x, uint64_t x_stride, uint32_t n,
            ThreadPool& pool, MatmulWorkspace& ws);
// The same with an explicit code path (lowered to what the CPU has), for tests and benchmarks.
void matmul(std::span<const Product> products, const float* x, uint64_t x_stride, uint32_t n,
            ThreadPool& pool, MatmulWorkspace& ws, Isa isa);

}  // namespace vkllm::cpu
