// Blob contents for storage tests: text-like bytes that zstd compresses well (varied enough that
// frames differ) and random bytes it cannot compress, as a byte vector or a std::string.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

namespace vkllm::test {

template <class Bytes = std::vector<std::byte>>
Bytes compressible_bytes(size_t n, std::mt19937_64& rng) {
  static const char* words[] = {"alpha ", "beta ", "gamma ", "delta ", "tensor ", "weight "};
  Bytes out;
  out.reserve(n);
  while (out.size() < n) {
    for (const char* p = words[rng() % 6]; *p && out.size() < n; ++p) {
      out.push_back(static_cast<typename Bytes::value_type>(*p));
    }
  }
  return out;
}

template <class Bytes = std::vector<std::byte>>
Bytes random_bytes(size_t n, std::mt19937_64& rng) {
  Bytes out(n, typename Bytes::value_type{});
  for (auto& b : out) b = static_cast<typename Bytes::value_type>(rng());
  return out;
}

}  // namespace vkllm::test
