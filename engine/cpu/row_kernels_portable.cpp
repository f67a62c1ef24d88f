// The row kernels for the portable code path (see row_kernels_impl.h).
#define VKLLM_ROW_KERNELS_TABLE kRowKernelsPortable
#include "engine/cpu/row_kernels_impl.h"
