// AVX-512 VL + VNNI build of the quant_matmul row kernels: the int8 dot products use vpdpbusd /
// vpdpwssd (compiled with -mavx512vnni; called only where the CPU has it).
#define VKLLM_QMM_VNNI 1
// GCC 12's unmasked 512-bit intrinsics start from _mm512_undefined_*(), which -Wuninitialized
// reports once they are inlined here; the value is never read.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "engine/cpu/quant_matmul_impl.h"

namespace vkllm::cpu::detail {

FastKernel avx512_kernel(gguf::TensorType type) {
  return kernel_for(type);
}

}  // namespace vkllm::cpu::detail
