// The machine's memory as Linux reports it, for accounting models that live in host memory (the
// CPU backend) the way device heaps are accounted for on a GPU.
#pragma once

#include <cstdint>
#include <string_view>

namespace vkllm::sched {

struct HostMemory {
  uint64_t total = 0;      // MemTotal
  uint64_t available = 0;  // MemAvailable: what can be allocated without swapping
};

// From /proc/meminfo (sysconf's physical pages where it is unreadable).
HostMemory read_host_memory();
// Parses /proc/meminfo's text; fields it lacks stay 0.
HostMemory parse_meminfo(std::string_view text);

}  // namespace vkllm::sched
