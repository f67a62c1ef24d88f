// Internal: float math the CPU kernels' loops call, written as plain arithmetic so loops over it
// vectorize for the ISA of the file that includes it (see row_kernels_impl.h: internal linkage,
// no shared inline code between files built with different -m flags).
#pragma once

#include <cstdint>
#include <cstring>

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

// GCC vectors as wide as the including file's ISA (4, 8 or 16 floats): loops written with them
// vectorize whatever the compiler's if-conversion does with the clamps above.
#if defined(__AVX512F__)
constexpr uint32_t W = 16;
#elif defined(__AVX2__)
constexpr uint32_t W = 8;
#else
constexpr uint32_t W = 4;
#endif
typedef float VF __attribute__((vector_size(W * sizeof(float))));
typedef int32_t VI __attribute__((vector_size(W * sizeof(int32_t))));

inline VF loadv(const float* p) {
  VF v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void storev(float* p, VF v) {
  std::memcpy(p, &v, sizeof v);
}
inline VF splat(float x) {
  return VF{} + x;
}
inline float hsum(VF v) {
  float s = 0.f;
  for (uint32_t i = 0; i < W; ++i) s += v[i];
  return s;
}

inline VF exp_v(VF x) {
  x = x < -87.0f ? splat(-87.0f) : x;
  x = x > 88.0f ? splat(88.0f) : x;
  const VF shifter = splat(12582912.0f);
  const VF n = (x * 1.44269504088896341f + shifter) - shifter;
  VF r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  VF p = splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const VI bits = (__builtin_convertvector(n, VI) + 127) << 23;
  return p * __builtin_bit_cast(VF, bits);
}

inline VF tanh_v(VF u) {
  u = u < -15.0f ? splat(-15.0f) : u;
  u = u > 15.0f ? splat(15.0f) : u;
  return 1.0f - 2.0f / (exp_v(2.0f * u) + 1.0f);
}

}  // namespace
}  // namespace vkllm::cpu::detail
