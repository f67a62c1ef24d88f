// /proc/meminfo parsing for the CPU backend's memory accounting.
#include "server/scheduler/host_memory.h"

#include <gtest/gtest.h>

namespace vkllm::sched {
namespace {

TEST(HostMemory, ParsesTotalAndAvailableInBytes) {
  const auto m = parse_meminfo(
      "MemTotal:       24576000 kB\nMemFree:         1000000 kB\nMemAvailable:   "
      "12000000 kB\nBuffers:          100 kB\n");
  EXPECT_EQ(m.total, 24576000ull * 1024);
  EXPECT_EQ(m.available, 12000000ull * 1024);
}

TEST(HostMemory, MissingOrPrefixedFieldsAreNotConfused) {
  // "SwapMemAvailable" must not be read as MemAvailable.
  const auto m = parse_meminfo("SwapMemAvailable: 5 kB\nMemTotal: 8 kB\n");
  EXPECT_EQ(m.total, 8u * 1024);
  EXPECT_EQ(m.available, 0u);
  EXPECT_EQ(parse_meminfo("").total, 0u);
}

TEST(HostMemory, ThisMachineHasSome) {
  const auto m = read_host_memory();
  EXPECT_GT(m.total, 0u);
  EXPECT_GT(m.available, 0u);
  EXPECT_LE(m.available, m.total);
}

}  // namespace
}  // namespace vkllm::sched
