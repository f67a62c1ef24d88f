// Helpers for the kernel tests: device buffers from host vectors and back, f16 rounding, random
// vectors. Everything goes through one Arena per test (reset between cases as needed).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "engine/vulkan/weight_layout.h"
#include "tests/engine/vk_test_context.h"
#include "tests/support/f16.h"

namespace vkllm::test {

inline float round_f16(float f) {
  return static_cast<float>(static_cast<_Float16>(f));
}

// Device slice holding `data`, bound with 16 spare zero bytes at the end (weight decoders read up
// to 16 bytes past a tensor; kernels take their sizes from parameters, not from the range).
template <typename T>
vk::BufferSlice to_device(vk::Arena& arena, std::span<const T> data) {
  vk::BufferSlice s = arena.allocate(data.size_bytes() + 16);
  std::vector<std::byte> bytes(s.size, std::byte{0});
  std::memcpy(bytes.data(), data.data(), data.size_bytes());
  vk::upload(vk_context().device(), s, std::span<const std::byte>(bytes));
  return s;
}
template <typename T>
vk::BufferSlice to_device(vk::Arena& arena, const std::vector<T>& data) {
  return to_device(arena, std::span<const T>(data));
}
// Device slice holding a weight tensor given in the file layout, in the device layout
// (vulkan/weight_layout.h: repacked where its type is), with the same 16 spare bytes.
inline vk::BufferSlice weights_to_device(vk::Arena& arena, gguf::TensorType type,
                                         std::span<const uint8_t> file_bytes) {
  vk::BufferSlice s = arena.allocate(vk::device_weight_bytes(type, file_bytes.size()) + 16);
  vk::upload(vk_context().device(), s, std::span<const std::byte>(std::vector<std::byte>(s.size)));
  vk::upload_weights(vk_context().pipelines(), type, s, file_bytes);
  return s;
}
// Device slice of n elements of T filled with a NaN-like pattern (catches unwritten outputs).
template <typename T>
vk::BufferSlice device_filled(vk::Arena& arena, size_t n, uint8_t byte = 0xFF) {
  std::vector<uint8_t> fill(std::max<size_t>(n * sizeof(T), 4), byte);
  return to_device(arena, std::span<const uint8_t>(fill));
}
template <typename T>
std::vector<T> from_device(vk::BufferSlice s, size_t n) {
  return vk::download<T>(vk_context().device(), s, n);
}

inline std::vector<float> random_vector(SeededRng& rng, size_t n, float lo = -1.f, float hi = 1.f) {
  std::vector<float> v(n);
  for (float& x : v) x = rng.uniform(lo, hi);
  return v;
}

// |got - want| <= abs_tol + rel_tol * |want|, with a message naming the index.
inline ::testing::AssertionResult near_all(std::span<const float> got, std::span<const float> want,
                                           double abs_tol, double rel_tol) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "size mismatch";
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(double(got[i]) - double(want[i]));
    if (!(err <= abs_tol + rel_tol * std::fabs(double(want[i]))))
      return ::testing::AssertionFailure() << "index " << i << ": got " << got[i] << ", want "
                                           << want[i] << " (error " << err << ")";
  }
  return ::testing::AssertionSuccess();
}

// An f16 copy a kernel wrote of the f32 values `f32`: each half within one f16 step of the value
// rounded (the GPU picks the rounding mode).
inline ::testing::AssertionResult f16_copy_matches(vk::BufferSlice f16,
                                                   std::span<const float> f32) {
  const std::vector<uint16_t> bits = vk::download<uint16_t>(vk_context().device(), f16, f32.size());
  std::vector<float> halves(f32.size()), rounded(f32.size());
  for (size_t i = 0; i < f32.size(); ++i) {
    halves[i] = float(f16_value(bits[i]));
    rounded[i] = round_f16(f32[i]);
  }
  return near_all(halves, rounded, 1e-7, 1e-3);
}

// The arena a kernel test case allocates its buffers from.
inline vk::Arena make_arena() {
  return vk::Arena(vk_context().device(), "kernel test", 64 << 20);
}

// Runs `record` in a fresh recording and waits.
template <typename F>
void run(F&& record) {
  vk::CommandRecorder rec(vk_context().device());
  rec.begin();
  record(rec);
  rec.submit_and_wait();
}

}  // namespace vkllm::test
