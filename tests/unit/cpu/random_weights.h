// Random weight matrices for the CPU matmul tests: every weight type quant_matmul takes, the
// encoded bytes and the exact float values the scalar references multiply with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/cpu/quant_matmul.h"
#include "engine/gguf/quants.h"
#include "tests/unit/cpu/cpu_test_support.h"

namespace vkllm::cpu::test {

inline constexpr gguf::TensorType kAllWeightTypes[] = {
    gguf::TensorType::F32,  gguf::TensorType::F16,  gguf::TensorType::BF16,
    gguf::TensorType::Q4_0, gguf::TensorType::Q4_1, gguf::TensorType::Q5_0,
    gguf::TensorType::Q5_1, gguf::TensorType::Q8_0, gguf::TensorType::IQ4_NL,
    gguf::TensorType::Q2_K, gguf::TensorType::Q3_K, gguf::TensorType::Q4_K,
    gguf::TensorType::Q5_K, gguf::TensorType::Q6_K, gguf::TensorType::IQ4_XS,
    gguf::TensorType::MXFP4};

// A random weight matrix in one type and its exact float values.
struct Weights {
  std::vector<std::byte> bytes;
  std::vector<float> values;  // dequantized by engine/gguf, row-major
  WeightView view;
};

inline Weights make_weights(SeededRng& rng, gguf::TensorType type, uint64_t rows, uint64_t cols) {
  Weights w;
  w.bytes.resize(rows * gguf::row_bytes(type, cols));
  if (gguf::can_quantize(type)) {
    const std::vector<float> src = rng.vec(rows * cols);
    gguf::quantize(type, src.data(), w.bytes.data(), rows * cols);
  } else {
    // No quantizer (IQ4_*): random codes and scales, with a valid f16 scale at the start of
    // every block.
    for (auto& b : w.bytes) b = std::byte(rng.below(256));
    const auto& tr = gguf::traits(type);
    for (size_t off = 0; off < w.bytes.size(); off += tr.block_bytes) {
      const uint16_t d = gguf::fp32_to_fp16(rng.uniform(0.001f, 0.02f));
      std::memcpy(w.bytes.data() + off, &d, 2);
    }
  }
  w.values.resize(rows * cols);
  gguf::dequantize(type, w.bytes.data(), w.values.data(), rows * cols);
  w.view = {type, w.bytes.data(), cols, rows};
  return w;
}

}  // namespace vkllm::cpu::test
