// A random engine seeded afresh each run (tests draw new inputs every time), with its seed at
// hand so a failure can name it (SCOPED_TRACE(s.trace())) and be replayed.
#pragma once

#include <random>
#include <string>

namespace vkllm::test {

template <class Engine = std::mt19937>
struct Seeded {
  unsigned seed = std::random_device{}();
  Engine rng{seed};
  std::string trace() const { return "seed " + std::to_string(seed); }
};

}  // namespace vkllm::test
