// The Ollama-layout tests' comparisons (ollama_layout_test.cpp, ollama_layout_vision_test.cpp):
// a translated view against its llama.cpp-layout twin (keys, values, tensors and bytes), the
// last logits of a prompt on either backend, the two layouts of one random model, and the
// error a half-matching file is refused with.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/gguf/ollama_layout.h"
#include "engine/model/model_maker.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/host_model.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "tests/engine/vk_test_context.h"

namespace vkllm::runtime::ollama_twins {

using gguf::GgufFile;
using gguf::ReadLayout;
using model::FileLayout;

inline bool same_value(const gguf::Value& a, const gguf::Value& b) {
  if (a.v.index() != b.v.index()) return false;
  if (const auto* arr = std::get_if<std::shared_ptr<gguf::Array>>(&a.v)) {
    const auto& other = std::get<std::shared_ptr<gguf::Array>>(b.v);
    if ((*arr)->element_type != other->element_type) return false;
    if ((*arr)->items.size() != other->items.size()) return false;
    for (size_t i = 0; i < (*arr)->items.size(); ++i) {
      if (!same_value((*arr)->items[i], other->items[i])) return false;
    }
    return true;
  }
  return a.v == b.v;
}

// The translated view holds every key and tensor (bytes included) of the llama.cpp twin; keys
// it has beyond those are returned. make-model writes <arch>.vocab_size, which Ollama's Gemma 3,
// Gemma 4, Qwen2.5-VL and Qwen3-VL layouts do not (the loaders take the embedding rows). Keys in
// `differing` may hold other values (the caller checks what the loaders read of them).
inline std::set<std::string> compare_views(const GgufFile& twin, const GgufFile& view,
                                           const std::set<std::string>& differing = {}) {
  for (const auto& [key, value] : twin.metadata()) {
    const gguf::Value* got = view.find(key);
    if (got && differing.contains(key)) continue;
    if (!got && (key == "gemma3.vocab_size" || key == "gemma-embedding.vocab_size" ||
                 key == "qwen2vl.vocab_size" || key == "qwen3vl.vocab_size" ||
                 key == "gemma4.vocab_size")) {
      EXPECT_EQ(
          value.v,
          gguf::Value{static_cast<uint32_t>(view.find_tensor("token_embd.weight")->shape[1])}.v);
    } else if (!got) {
      ADD_FAILURE() << "the translated view lacks " << key;
    } else {
      EXPECT_TRUE(same_value(value, *got)) << key << " differs";
    }
  }
  std::set<std::string> extra;
  for (const auto& [key, value] : view.metadata()) {
    if (!twin.has(key)) extra.insert(key);
  }
  EXPECT_EQ(view.tensors().size(), twin.tensors().size());
  for (const auto& t : twin.tensors()) {
    const gguf::TensorInfo* got = view.find_tensor(t.name);
    if (!got) {
      ADD_FAILURE() << "the translated view lacks tensor " << t.name;
      continue;
    }
    EXPECT_EQ(got->type, t.type) << t.name;
    EXPECT_EQ(got->shape, t.shape) << t.name;
    const auto a = twin.tensor_data(t), b = view.tensor_data(*got);
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << t.name << " bytes";
  }
  return extra;
}

// The last position's logits after `tokens`, on the CPU backend or Vulkan (lavapipe in CI).
inline std::vector<float> last_logits(const GgufFile& file, std::span<const int32_t> tokens,
                                      bool cpu) {
  RunnerOptions opts;
  opts.max_batch_tokens = 16;
  opts.max_seqs = 1;
  opts.max_context = 32;
  opts.kv_budget_bytes = 4u << 20;
  if (cpu) {
    const HostModel host(file);
    Runner runner(host, opts);
    return Generator(runner).feed(tokens);
  }
  Model device(test::vk_context(), file);
  Runner runner(device, opts);
  return Generator(runner).feed(tokens);
}

// The view's last logits equal the twin's, on the CPU backend and on Vulkan.
inline void expect_same_logits(const GgufFile& view, const GgufFile& twin,
                               std::span<const int32_t> prompt) {
  for (const bool cpu : {true, false}) {
    SCOPED_TRACE(cpu ? "cpu" : "vulkan");
    EXPECT_EQ(last_logits(view, prompt, cpu), last_logits(twin, prompt, cpu));
  }
}

struct Twins {
  std::vector<uint8_t> llama_cpp, ollama;
};

inline Twins make_twins(model::MakeModelOptions o, const GgufFile& vocab) {
  Twins t;
  gguf::GgufWriter a;
  model::build_random_model(o, vocab, a);
  t.llama_cpp = a.serialize();
  o.layout = FileLayout::Ollama;
  gguf::GgufWriter b;
  model::build_random_model(o, vocab, b);
  t.ollama = b.serialize();
  return t;
}

inline std::string layout_error(const std::vector<uint8_t>& bytes) {
  try {
    GgufFile::parse(bytes);
  } catch (const gguf::LayoutError& e) {
    EXPECT_NO_THROW(GgufFile::parse(bytes, ReadLayout::Raw)) << "gguf-info --raw still reads it";
    return e.what();
  }
  return "(accepted)";
}

}  // namespace vkllm::runtime::ollama_twins
