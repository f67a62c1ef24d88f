// The attention group kernel for the avx512 code path (see attention_impl.h).
#define VKLLM_ATTEND_NAME kAttendAvx512
#include "engine/cpu/attention_impl.h"
