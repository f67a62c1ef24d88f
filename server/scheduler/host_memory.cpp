#include "server/scheduler/host_memory.h"

#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace vkllm::sched {

std::string gib_text(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / double(kBytesPerGiB));
  return buf;
}

HostMemory parse_meminfo(std::string_view text) {
  HostMemory m;
  auto field = [&](std::string_view key) -> uint64_t {
    // Lines read "MemAvailable:   12345678 kB".
    for (size_t at = 0; (at = text.find(key, at)) != std::string_view::npos; at += key.size()) {
      if (at != 0 && text[at - 1] != '\n') continue;
      if (at + key.size() >= text.size() || text[at + key.size()] != ':') continue;
      size_t p = at + key.size() + 1;
      while (p < text.size() && text[p] == ' ') ++p;
      uint64_t kib = 0;
      const auto [end, ec] = std::from_chars(text.data() + p, text.data() + text.size(), kib);
      if (ec != std::errc()) return 0;
      (void)end;
      return kib * 1024;
    }
    return 0;
  };
  m.total = field("MemTotal");
  m.available = field("MemAvailable");
  return m;
}

HostMemory read_host_memory() {
  std::ifstream in("/proc/meminfo");
  std::stringstream ss;
  ss << in.rdbuf();
  HostMemory m = parse_meminfo(ss.str());
  if (m.total == 0) {
    const long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES);
    const long page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) m.total = uint64_t(pages) * uint64_t(page);
    if (avail > 0 && page > 0) m.available = uint64_t(avail) * uint64_t(page);
  }
  if (m.available == 0) m.available = m.total;  // kernels before 3.14 lack MemAvailable
  return m;
}

}  // namespace vkllm::sched
