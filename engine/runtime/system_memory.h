// The memory the system can still give this process, for sizing what the CPU backend allocates.
#pragma once

#include <cstdint>

namespace vkllm::runtime {

// MemAvailable from /proc/meminfo in bytes; 0 when unknown.
uint64_t system_memory_available();

}  // namespace vkllm::runtime
