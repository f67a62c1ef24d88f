// The quantized KV cache end to end on real weights: tolstoy-mem (a model that memorised War and
// Peace, ../shared/testdata/models) recites a line of the novel greedily with the same tokens
// from a q8_0 cache as from f16, on the CPU backend and on Vulkan (lavapipe here), and nearly the
// same from q4_0; the same KV budget holds about 1.9x / 3.6x the blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/host_model.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/engine/vk_test_context.h"
#include "tests/reference/llama_cpp_reference.h"

namespace vkllm::runtime {
namespace {

using kv::CacheType;

constexpr int kSteps = 16;

struct Recital {
  std::vector<int32_t> tokens;
  uint32_t blocks = 0;
};

Recital recite(Runner& runner, const std::vector<int32_t>& prompt) {
  Generator gen(runner);
  std::vector<float> logits = gen.feed(prompt);
  Recital r;
  r.blocks = runner.pool().num_blocks();
  int32_t next =
      static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  for (int i = 0; i < kSteps; ++i) {
    r.tokens.push_back(next);
    next = gen.feed_greedy(next);
  }
  return r;
}

RunnerOptions options(CacheType type) {
  RunnerOptions o;
  o.max_seqs = 1;
  o.max_context = 256;
  o.max_batch_tokens = 64;
  o.kv_budget_bytes = 4u << 20;
  o.kv_cache_type = type;
  o.warm_up = false;  // only the pipelines the recital runs
  return o;
}

size_t same_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

TEST(KvCacheType, MemorisedRecitalIsTheSameFromAQuantizedCache) {
  const std::string path =
      (reference::shared_testdata_dir() / "models" / "tolstoy-mem-q4_k_m.gguf").string();
  const gguf::GgufFile file = gguf::GgufFile::open(path);
  const auto tok = tokenizer::Tokenizer::from_gguf(file);
  const std::vector<int32_t> prompt = tok->encode(
      "It was in July, 1805, and the speaker was the well-known Anna Pavlovna", true, false);
  // The CPU backend: f16, q8_0 and q4_0.
  HostModel host(gguf::GgufFile::open(path));
  auto on_cpu = [&](CacheType t) {
    Runner runner(host, options(t));
    return recite(runner, prompt);
  };
  const Recital f16 = on_cpu(CacheType::F16), q8 = on_cpu(CacheType::Q8_0),
                q4 = on_cpu(CacheType::Q4_0);
  EXPECT_EQ(q8.tokens, f16.tokens);
  // q4_0 keeps a quarter of the bits: the recital may drift late, never early.
  EXPECT_GE(same_prefix(q4.tokens, f16.tokens), size_t(kSteps / 2));
  // 4 MiB of 6 layers x 2 KV heads x 16 slots, rows of 64 values: 128 / 68 / 36 bytes (85 / 160
  // / 303 blocks).
  EXPECT_EQ(f16.blocks, (4u << 20) / (2 * 6 * 2 * 16 * 128));
  EXPECT_EQ(q8.blocks, (4u << 20) / (2 * 6 * 2 * 16 * 68));
  EXPECT_EQ(q4.blocks, (4u << 20) / (2 * 6 * 2 * 16 * 36));
  // Vulkan (the backends agree on f16 elsewhere): the q8_0 rows the rope_kv / kv_copy kernels
  // wrote, read by the prefill and chunked decode kernels, recite the same tokens.
  Model model(test::vk_context(), file);
  Runner runner(model, options(CacheType::Q8_0));
  const Recital vk_q8 = recite(runner, prompt);
  EXPECT_EQ(vk_q8.tokens, f16.tokens);
  EXPECT_EQ(vk_q8.blocks, q8.blocks);
}

}  // namespace
}  // namespace vkllm::runtime
