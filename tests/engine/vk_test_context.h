// Shared helpers for engine tests: one Vulkan context per test process (lavapipe in CI) and a
// random generator seeded from std::random_device whose seed is printed with every failure.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "engine/vulkan/context.h"

namespace vkllm::test {

inline vk::Context& vk_context() {
  static vk::Context context;
  return context;
}

// The same device opened a second time (its own Vulkan device, memory and queues): the second
// device of the split-model tests.
inline vk::Context& second_vk_context() {
  static vk::Context context([] {
    vk::DeviceOptions o;
    o.log_summary = false;
    return o;
  }());
  return context;
}

// Each test creates one: the seed goes into every assertion message of the test's scope.
class SeededRng {
 public:
  SeededRng() : seed_(std::random_device{}()), gen_(seed_), trace_(__FILE__, __LINE__, message()) {}
  uint32_t seed() const { return seed_; }
  std::mt19937& gen() { return gen_; }
  float uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(gen_); }
  float normal(float mean = 0.f, float stddev = 1.f) {
    return std::normal_distribution<float>(mean, stddev)(gen_);
  }
  uint32_t below(uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(gen_); }

 private:
  std::string message() const { return "random seed " + std::to_string(seed_); }
  uint32_t seed_;
  std::mt19937 gen_;
  ::testing::ScopedTrace trace_;
};

}  // namespace vkllm::test
