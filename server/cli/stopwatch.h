// Wall time for the engine commands' reports.
#pragma once

#include <chrono>

namespace vkllm::cli {

inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace vkllm::cli
