// `vkllm bench`: prefill and batched-decode throughput of a GGUF model on the device, plus the
// device's measured copy bandwidth (for the memory-bandwidth roofline).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vkllm::cli {

struct BenchArgs {
  std::string model;
  std::string device;              // --device (empty: VKLLM_DEVICE)
  std::vector<std::string> tunes;  // --tune key=value
  std::vector<uint32_t> batches{1, 8, 32, 64};
  uint32_t prompt_tokens = 512;
  uint32_t gen_tokens = 128;
  // Tokens of context each sequence holds before prefill and decode are timed (llama-bench -d).
  uint32_t depth = 0;
  // Speculative verification (issue 39): after decode, steps where each sequence brings this
  // many drafted tokens after its last one, scored with greedy rows at every position and
  // accepted whole (0: not measured).
  uint32_t verify = 0;
  bool json = false;
  bool cold =
      false;  // measure start-up instead: load, pipelines, first token (run_cold_start_bench)
};

int run_bench(const BenchArgs& args);
int run_cold_start_bench(const BenchArgs& args);

}  // namespace vkllm::cli
