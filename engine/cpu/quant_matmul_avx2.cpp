// AVX2 + FMA + F16C build of the quant_matmul row kernels (compiled with those flags only).
#include "engine/cpu/quant_matmul_impl.h"

namespace vkllm::cpu::detail {

FastKernel avx2_kernel(gguf::TensorType type) {
  return kernel_for(type);
}

}  // namespace vkllm::cpu::detail
