// Zeroed, cache-line aligned host arrays for the CPU backend's activations, caches and states.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace vkllm::runtime {

struct FreeBytes {
  void operator()(void* p) const { std::free(p); }
};

// Zeroed host memory on a cache line (the kernels' widest loads).
template <class T>
std::unique_ptr<T[], FreeBytes> host_array(uint64_t n) {
  const uint64_t bytes = std::max<uint64_t>((n * sizeof(T) + 63) / 64 * 64, 64);
  void* p = std::aligned_alloc(64, bytes);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  return std::unique_ptr<T[], FreeBytes>(static_cast<T*>(p));
}

}  // namespace vkllm::runtime
