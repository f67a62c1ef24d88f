// The attention group kernel for the avx2 code path (see attention_impl.h).
#define VKLLM_ATTEND_NAME kAttendAvx2
#include "engine/cpu/attention_impl.h"
