// f16 bit patterns to and from floats, for tests that fill or read f16 buffers (KV caches,
// weights).
#pragma once

#include <cstdint>
#include <cstring>

namespace vkllm::test {

inline uint16_t f16_bits(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

inline double f16_value(uint16_t b) {
  _Float16 h;
  std::memcpy(&h, &b, 2);
  return double(h);
}

}  // namespace vkllm::test
