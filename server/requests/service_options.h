// Request-level limits of GenerationService, filled by the configuration module.
#pragma once

#include <chrono>
#include <cstdint>

namespace vkllm::requests {

struct ServiceOptions {
  uint32_t max_queue = 512;  // OLLAMA_MAX_QUEUE
  // Wall time a request's prompt work (template rendering, truncation, tokenizing) may take
  // before it is refused: one hostile request must not hold a worker for long.
  std::chrono::milliseconds prompt_budget{20000};
};

}  // namespace vkllm::requests
