// AVX2 + FMA + F16C build of the quant_matmul row kernels (compiled with those flags only).
#include "engine/cpu/quant_matmul_impl.h"

namespace vkllm::cpu::detail {

FastKernel avx2_kernel(gguf::TensorType type) {
  using gguf::TensorType;
  switch (type) {
    case TensorType::Q4_K:
      return {by_tokens<q4_k_body>, ActFormat::Q8_K};
    case TensorType::Q5_K:
      return {by_tokens<q5_k_body>, ActFormat::Q8_K};
    case TensorType::Q6_K:
      return {by_tokens<q6_k_body>, ActFormat::Q8_K};
    case TensorType::Q8_0:
      return {by_tokens<q8_0_body>, ActFormat::Q8_0};
    case TensorType::Q4_0:
      return {by_tokens<q4_0_body>, ActFormat::Q8_0};
    case TensorType::F16:
      return {by_tokens<f16_body>, ActFormat::F32};
    case TensorType::BF16:
      return {by_tokens<bf16_body>, ActFormat::F32};
    case TensorType::F32:
      return {by_tokens<f32_body>, ActFormat::F32};
    default:
      return {};
  }
}

}  // namespace vkllm::cpu::detail
