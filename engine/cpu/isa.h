// The instruction sets the CPU kernels have code paths for, and which one a process uses: the
// best the CPU (and OS) supports, capped by VKLLM_CPU_ISA ("scalar" or "portable", "avx2",
// "avx512", "amx"; set_isa_cap) so the portable path can be forced on any machine. Kernels built
// for an ISA live in files named *_avx2.cpp / *_avx512.cpp (CMake compiles those with the matching
// -m flags); they are called only after this check.
#pragma once

#include <cstdint>
#include <string_view>

namespace vkllm::cpu {

// Ordered: a later one implies the earlier ones' instructions.
enum class Isa : uint8_t {
  Portable = 0,  // baseline x86-64 / any target: plain C++ the compiler vectorizes
  Avx2 = 1,      // AVX2 + FMA + F16C
  Avx512 = 2,    // AVX-512 F/BW/DQ/VL on top of Avx2
  // AMX tiles with BF16 products and AVX512-BF16 on top of Avx512, with the tile state granted
  // to this process by the OS (Linux: arch_prctl ARCH_REQ_XCOMP_PERM): the matmuls of prefill
  // run on the tile units (engine/cpu/amx_matmul.h); every other kernel takes its Avx512 path.
  Amx = 3,
};

// What this CPU and OS can run (cpuid and xgetbv, checked once).
Isa supported_isa();
// supported_isa() capped by set_isa_cap() (VKLLM_CPU_ISA, through the configuration module).
Isa selected_isa();
void set_isa_cap(Isa cap);  // before the first model loads
// `wanted` lowered to what the CPU supports (so tests and callers may ask for any path).
Isa usable_isa(Isa wanted);
std::string_view isa_name(Isa isa);
// Parses "scalar" / "portable", "avx2", "avx512", "amx" (the VKLLM_CPU_ISA values).
bool parse_isa(std::string_view name, Isa& out);

}  // namespace vkllm::cpu
