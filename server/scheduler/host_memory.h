// The machine's memory as Linux reports it, for accounting models that live in host memory (the
// CPU backend) the way device heaps are accounted for on a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace vkllm::sched {

inline constexpr uint64_t kBytesPerGiB = uint64_t{1} << 30;

// A byte count as the load log and the memory refusals print it ("1.23 GiB").
std::string gib_text(uint64_t bytes);

struct HostMemory {
  uint64_t total = 0;      // MemTotal
  uint64_t available = 0;  // MemAvailable: what can be allocated without swapping
};

// From /proc/meminfo (sysconf's physical pages where it is unreadable).
HostMemory read_host_memory();
// Parses /proc/meminfo's text; fields it lacks stay 0.
HostMemory parse_meminfo(std::string_view text);

}  // namespace vkllm::sched
