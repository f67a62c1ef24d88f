// AVX2 + FMA + F16C build of the quant_matmul row kernels (compiled with those flags only).
#include "engine/cpu/quant_matmul_impl.h"

namespace vkllm::cpu::detail {

FastKernel avx2_kernel(gguf::TensorType type) {
  using gguf::TensorType;
  switch (type) {
    case TensorType::Q4_K:
      return fast<q4_k_body>(ActFormat::Q8_K);
    case TensorType::Q5_K:
      return fast<q5_k_body>(ActFormat::Q8_K);
    case TensorType::Q6_K:
      return fast<q6_k_body>(ActFormat::Q8_K);
    case TensorType::Q8_0:
      return fast<q8_0_body>(ActFormat::Q8_0);
    case TensorType::Q4_0:
      return fast<q4_0_body>(ActFormat::Q8_0);
    case TensorType::MXFP4:
      return fast<mxfp4_body>(ActFormat::Q8_0);
    case TensorType::F16:
      return fast<f16_body>(ActFormat::F32);
    case TensorType::BF16:
      return fast<bf16_body>(ActFormat::F32);
    case TensorType::F32:
      return fast<f32_body>(ActFormat::F32);
    default:
      return {};
  }
}

}  // namespace vkllm::cpu::detail
