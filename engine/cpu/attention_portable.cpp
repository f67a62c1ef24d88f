// The attention group kernel for the portable code path (see attention_impl.h).
#define VKLLM_ATTEND_NAME kAttendPortable
#include "engine/cpu/attention_impl.h"
