// Internal: float math the CPU kernels' loops call, written as plain arithmetic so loops over it
// vectorize for the ISA of the file that includes it (see row_kernels_impl.h: internal linkage,
// no shared inline code between files built with different -m flags).
#pragma once

#include <cstdint>

namespace vkllm::cpu::detail {
namespace {

inline float clampf(float x, float lo, float hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

// e^x within a few ulp for |x| <= 87 (Cephes' polynomial after x = n ln2 + r); plain arithmetic,
// so loops calling it vectorize. Inputs are clamped to [-87, 88].
inline float exp_approx(float x) {
  x = clampf(x, -87.0f, 88.0f);
  const float shifter = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float n = (x * 1.44269504088896341f + shifter) - shifter;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  return p * __builtin_bit_cast(float, bits);
}

// tanh(u) = 1 - 2 / (e^2u + 1), clamped like the shaders (|u| <= 15).
inline float tanh_approx(float u) {
  u = clampf(u, -15.0f, 15.0f);
  return 1.0f - 2.0f / (exp_approx(2.0f * u) + 1.0f);
}

}  // namespace
}  // namespace vkllm::cpu::detail
