// The row kernels for the avx2 code path (see row_kernels_impl.h).
#define VKLLM_ROW_KERNELS_TABLE kRowKernelsAvx2
#include "engine/cpu/row_kernels_impl.h"
