// AVX-512 VL + VNNI build of the quant_matmul row kernels: 512-bit kernels where they were
// written, the 256-bit ones with vpdpbusd / vpdpwssd elsewhere (compiled with -mavx512vnni;
// called only where the CPU has it).
#define VKLLM_QMM_VNNI 1
// GCC 12's unmasked 512-bit intrinsics start from _mm512_undefined_*(), which -Wuninitialized
// reports once they are inlined here; the value is never read.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "engine/cpu/quant_matmul_impl512.h"

namespace vkllm::cpu::detail {

FastKernel avx512_kernel(gguf::TensorType type) {
  using gguf::TensorType;
  switch (type) {
    case TensorType::Q4_K:
      return fast<q4_k_512_body, 8>(ActFormat::Q8_K);
    case TensorType::Q5_K:
      return fast<q5_k_512_body, 8>(ActFormat::Q8_K);
    case TensorType::Q6_K:
      return fast<q6_k_512_body, 8>(ActFormat::Q8_K);
    case TensorType::Q8_0:
      return fast<q8_0_512_body, 8>(ActFormat::Q8_0U);
    case TensorType::F16:
      return fast<f16_512_body>(ActFormat::F32, f16_512_tile);
    // The 256-bit bodies, built here with the VNNI dot products.
    case TensorType::Q4_0:
      return fast<q4_0_body>(ActFormat::Q8_0);
    case TensorType::MXFP4:
      return fast<mxfp4_body>(ActFormat::Q8_0);
    case TensorType::BF16:
      return fast<bf16_body>(ActFormat::F32);
    case TensorType::F32:
      return fast<f32_body>(ActFormat::F32);
    default:
      return {};
  }
}

}  // namespace vkllm::cpu::detail
