// Helpers for the CPU kernel tests: a random generator seeded per test from std::random_device
// (the seed is in every failure message), f16 bits, tolerance checks, and the code paths this
// machine can run (each test checks every one of them against its scalar reference).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "engine/cpu/isa.h"
#include "tests/support/f16.h"

namespace vkllm::cpu::test {

class SeededRng {
 public:
  SeededRng() : seed_(std::random_device{}()), gen_(seed_), trace_(__FILE__, __LINE__, message()) {}
  std::mt19937& gen() { return gen_; }
  float uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(gen_); }
  uint32_t below(uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(gen_); }
  std::vector<float> vec(size_t n, float lo = -1.f, float hi = 1.f) {
    std::vector<float> v(n);
    for (float& x : v) x = uniform(lo, hi);
    return v;
  }

 private:
  std::string message() const { return "random seed " + std::to_string(seed_); }
  uint32_t seed_;
  std::mt19937 gen_;
  ::testing::ScopedTrace trace_;
};

using ::vkllm::test::f16_bits;
using ::vkllm::test::f16_value;

// The code paths to test here: portable always, and the SIMD ones this CPU runs.
inline std::vector<Isa> testable_isas() {
  std::vector<Isa> v = {Isa::Portable};
  if (supported_isa() >= Isa::Avx2) v.push_back(Isa::Avx2);
  if (supported_isa() >= Isa::Avx512) v.push_back(Isa::Avx512);
  return v;
}

// |got - want| <= abs_tol + rel_tol * |want| for every element, naming the first that is not.
inline ::testing::AssertionResult near_all(std::span<const float> got, std::span<const double> want,
                                           double abs_tol, double rel_tol) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "size mismatch";
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(double(got[i]) - want[i]);
    if (!(err <= abs_tol + rel_tol * std::fabs(want[i])))
      return ::testing::AssertionFailure() << "index " << i << ": got " << got[i] << ", want "
                                           << want[i] << " (error " << err << ")";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace vkllm::cpu::test
