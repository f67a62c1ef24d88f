// Random fixture models for engine tests that compare the Vulkan forward pass with the scalar
// reference: a 300-token vocabulary, make-model's random weights on top of it, a Vulkan context
// whose storage-buffer binding range is capped (so large tensors load split by rows), and the
// greedy token of a logits row.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_maker.h"
#include "engine/vulkan/context.h"

namespace vkllm::test {

constexpr uint32_t kFixtureVocab = 300;

// Far below a 256-wide fixture's embedding, output, FFN and fused tensors at every weight type.
constexpr uint64_t kCappedBindingRange = 40 << 10;

// A tokenizer-only GGUF (llama, BOS 1) that make-model takes as its vocab file.
inline std::vector<uint8_t> fixture_vocab_bytes() {
  gguf::GgufWriter w;
  w.set_string("tokenizer.ggml.model", "llama");
  std::vector<std::string> tokens{"<unk>", "<s>", "</s>"};
  while (tokens.size() < kFixtureVocab) tokens.push_back("tok" + std::to_string(tokens.size()));
  w.set_strings("tokenizer.ggml.tokens", tokens);
  w.set_f32s("tokenizer.ggml.scores", std::vector<float>(tokens.size(), 0.0f));
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  return w.serialize();
}

// The GGUF bytes of a random model over the fixture vocab; `extra` may add keys before writing.
inline std::vector<uint8_t> random_model_bytes(
    const model::MakeModelOptions& options,
    const std::function<void(gguf::GgufWriter&)>& extra = {}) {
  const std::vector<uint8_t> vocab_bytes = fixture_vocab_bytes();
  const auto vocab = gguf::GgufFile::parse(vocab_bytes);
  gguf::GgufWriter w;
  model::build_random_model(options, vocab, w);
  if (extra) extra(w);
  return w.serialize();
}

// llama 256x2x4x2 (head_dim 64) with an n_ff of 320, so ffn_down rows are no multiple of 256.
inline model::MakeModelOptions wide_llama_options(model::FileType type, uint64_t seed) {
  model::MakeModelOptions o;
  o.arch = "llama";
  o.shape = model::parse_model_shape("256x2x4x2");
  o.shape.n_ff = 320;
  o.file_type = type;
  o.seed = seed;
  return o;
}

// One per test process, like vk_context(), but assuming bindings of kCappedBindingRange at most.
inline vk::Context& capped_context() {
  static vk::Context context([] {
    vk::DeviceOptions o;
    o.max_binding_range = kCappedBindingRange;
    o.log_summary = false;
    return o;
  }());
  return context;
}

inline int32_t argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

}  // namespace vkllm::test
