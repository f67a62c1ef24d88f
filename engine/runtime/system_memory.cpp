#include "engine/runtime/system_memory.h"

#include <fstream>
#include <string>

namespace vkllm::runtime {

uint64_t system_memory_available() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  uint64_t kb = 0;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

}  // namespace vkllm::runtime
