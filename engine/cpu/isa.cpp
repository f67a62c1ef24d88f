#include "engine/cpu/isa.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace vkllm::cpu {
namespace {

Isa detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  // libgcc's cpu model also checks that the OS saves the wider registers (XCR0).
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("f16c");
  if (!avx2) return Isa::Portable;
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  return avx512 ? Isa::Avx512 : Isa::Avx2;
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
  } else {
    return false;
  }
  return true;
}

Isa selected_isa() {
  static const Isa isa = [] {
    const char* env = std::getenv("VKLLM_CPU_ISA");
    if (env == nullptr || *env == '\0') return supported_isa();
    Isa wanted;
    if (!parse_isa(env, wanted))
      throw std::invalid_argument(std::string("VKLLM_CPU_ISA=") + env +
                                  ": expected scalar, avx2 or avx512");
    return min_isa(wanted, supported_isa());
  }();
  return isa;
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
  }
  return "unknown";
}

}  // namespace vkllm::cpu
