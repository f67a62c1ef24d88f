// The row kernels for the avx512 code path (see row_kernels_impl.h).
#define VKLLM_ROW_KERNELS_TABLE kRowKernelsAvx512
#include "engine/cpu/row_kernels_impl.h"
