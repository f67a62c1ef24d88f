#include "engine/cpu/isa.h"

#include <atomic>

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#include <stdexcept>
#include <string>

namespace vkllm::cpu {
namespace {

// AMX needs the CPU's tile and BF16 units, the OS saving the tile state (XCR0 bits 17-18) and,
// on Linux, this process's request for it: the kernel leaves the tile data disabled (first use
// faults) until the process asks with arch_prctl, so that signal frames stay small elsewhere.
bool amx_enabled() {
#if defined(__x86_64__) && defined(__linux__)
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false;  // OSXSAVE
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const bool amx_bf16 = d & (1u << 22), amx_tile = d & (1u << 24);
  if (!amx_bf16 || !amx_tile) return false;
  if (!__get_cpuid_count(7, 1, &a, &b, &c, &d) || !(a & (1u << 5))) return false;  // AVX512_BF16
  uint32_t xcr0_lo, xcr0_hi;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  constexpr uint32_t kTileState = (1u << 17) | (1u << 18);  // XTILECFG, XTILEDATA
  if ((xcr0_lo & kTileState) != kTileState) return false;
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

Isa detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  // libgcc's cpu model also checks that the OS saves the wider registers (XCR0).
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("f16c");
  if (!avx2) return Isa::Portable;
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  if (!avx512) return Isa::Avx2;
  return amx_enabled() ? Isa::Amx : Isa::Avx512;
#else
  return Isa::Portable;
#endif
}

Isa min_isa(Isa a, Isa b) {
  return static_cast<uint8_t>(a) < static_cast<uint8_t>(b) ? a : b;
}

}  // namespace

Isa supported_isa() {
  static const Isa isa = detect();
  return isa;
}

bool parse_isa(std::string_view name, Isa& out) {
  if (name == "scalar" || name == "portable") {
    out = Isa::Portable;
  } else if (name == "avx2") {
    out = Isa::Avx2;
  } else if (name == "avx512") {
    out = Isa::Avx512;
  } else if (name == "amx") {
    out = Isa::Amx;
  } else {
    return false;
  }
  return true;
}

namespace {
std::atomic<Isa> isa_cap{Isa::Amx};
}  // namespace

void set_isa_cap(Isa cap) {
  isa_cap = cap;
}

Isa selected_isa() {
  return min_isa(isa_cap.load(), supported_isa());
}

Isa usable_isa(Isa wanted) {
  return min_isa(wanted, supported_isa());
}

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::Portable:
      return "portable";
    case Isa::Avx2:
      return "avx2";
    case Isa::Avx512:
      return "avx512";
    case Isa::Amx:
      return "amx";
  }
  return "unknown";
}

}  // namespace vkllm::cpu
