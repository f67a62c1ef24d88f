// The merged tensor data of a base model with a LoRA adapter (engine/runtime/lora_merge.h):
// untouched weights pass through byte for byte, adapted ones are W + scale * B A rounded to their
// type (or, from a quantized base, widened to F16), whatever chunks the loader reads in.
#include "engine/runtime/lora_merge.h"

#include <gtest/gtest.h>

#include <cstring>

#include "engine/gguf/gguf_writer.h"
#include "engine/gguf/quants.h"
#include "engine/model/lora_maker.h"
#include "engine/model/model_maker.h"
#include "engine/runtime/host_model.h"

namespace vkllm::runtime {
namespace {

using gguf::TensorType;

std::vector<uint8_t> base_bytes(model::FileType type) {
  gguf::GgufWriter v;
  v.set_string("tokenizer.ggml.model", "llama");
  std::vector<std::string> tokens{"<unk>", "<s>", "</s>"};
  while (tokens.size() < 64) tokens.push_back("tok" + std::to_string(tokens.size()));
  v.set_strings("tokenizer.ggml.tokens", tokens);
  v.set_f32s("tokenizer.ggml.scores", std::vector<float>(tokens.size(), 0.0f));
  const auto vocab_image = v.serialize();
  const auto vocab = gguf::GgufFile::parse(vocab_image);
  model::MakeModelOptions o;
  o.arch = "llama";
  o.shape = model::parse_model_shape("256x1x4x2");
  o.file_type = type;
  o.seed = 9;
  gguf::GgufWriter w;
  model::build_random_model(o, vocab, w);
  return w.serialize();
}

// Reads the whole data section of `header` through `source` in uneven chunks.
std::vector<std::byte> read_all(const gguf::GgufFile& header, TensorDataSource& source) {
  uint64_t end = 0;
  for (const auto& t : header.tensors()) end = std::max(end, t.offset + t.byte_size);
  std::vector<std::byte> out(end);
  for (uint64_t pos = 0, step = 1000; pos < end; pos += step, step = step * 7 % 100003 + 1) {
    source.read(pos, std::span(out).subspan(pos, std::min(step, end - pos)));
  }
  return out;
}

void check_merge(model::FileType type, bool requantize) {
  const auto base_image = base_bytes(type);
  const auto base = gguf::GgufFile::parse(base_image);
  model::MakeLoraOptions lo;
  lo.targets = {"attn_q", "ffn_down"};
  lo.seed = 4;
  gguf::GgufWriter lw;
  model::build_random_lora(lo, base, lw);
  const auto lora_image = lw.serialize();
  const auto lora_file = gguf::GgufFile::parse(lora_image);
  const auto adapter = model::LoraAdapter::from_bytes(lora_image);

  LoraMergeOptions options;
  options.requantize = requantize;
  const auto header = lora_merged_header(base, adapter, options);
  GgufFileSource base_source(base);
  LoraMergedSource merged(base, header, base_source, adapter, options);
  const auto data = read_all(header, merged);

  size_t adapted = 0;
  for (const auto& t : header.tensors()) {
    const auto& b = *base.find_tensor(t.name);
    const auto got = std::span(data).subspan(t.offset, t.byte_size);
    if (!adapter.adapts(t.name)) {
      EXPECT_EQ(t.type, b.type);
      ASSERT_EQ(t.byte_size, b.byte_size);
      EXPECT_EQ(std::memcmp(got.data(), base.tensor_data(b).data(), b.byte_size), 0) << t.name;
      continue;
    }
    ++adapted;
    const bool quantized = model::is_quantized(type);
    EXPECT_EQ(t.type, quantized && !requantize ? TensorType::F16 : b.type) << t.name;
    // The long way: W (dequantized) + scale * B A with A and B from the adapter file.
    const uint64_t n = b.shape[0], rows = b.shape[1];
    std::vector<float> w(n * rows), a(n * lo.rank), bb(lo.rank * rows);
    gguf::dequantize(b.type, base.tensor_data(b).data(), w.data(), w.size());
    const auto* ta = lora_file.find_tensor(t.name + ".lora_a");
    const auto* tb = lora_file.find_tensor(t.name + ".lora_b");
    gguf::dequantize(ta->type, lora_file.tensor_data(*ta).data(), a.data(), a.size());
    gguf::dequantize(tb->type, lora_file.tensor_data(*tb).data(), bb.data(), bb.size());
    const float scale = lo.alpha / static_cast<float>(lo.rank);
    for (uint64_t o = 0; o < rows; ++o) {
      for (uint64_t i = 0; i < n; ++i) {
        float d = 0;
        for (uint32_t k = 0; k < lo.rank; ++k) d += bb[o * lo.rank + k] * a[k * n + i];
        w[o * n + i] += scale * d;
      }
    }
    std::vector<float> back(w.size());
    gguf::dequantize(t.type, got.data(), back.data(), back.size());
    if (t.type == TensorType::F16 || t.type == TensorType::F32) {
      // One rounding to the stored type, up to float summation order.
      for (size_t i = 0; i < w.size(); ++i) {
        ASSERT_NEAR(back[i], w[i], std::abs(w[i]) * 1e-3 + 1e-6) << t.name << " element " << i;
      }
    } else {
      // Re-quantized: what quantizing the merged weight gives.
      std::vector<uint8_t> q(gguf::row_bytes(t.type, n) * rows);
      gguf::quantize(t.type, w.data(), q.data(), w.size());
      std::vector<float> want(w.size());
      gguf::dequantize(t.type, q.data(), want.data(), want.size());
      double err = 0;
      for (size_t i = 0; i < w.size(); ++i)
        err = std::max(err, double(std::abs(back[i] - want[i])));
      EXPECT_LT(err, 1e-2) << t.name;
    }
  }
  EXPECT_EQ(adapted, 2u);
  // The merged header and data load as a model.
  LoraMergedSource again(base, header, base_source, adapter, options);
  HostModel model(header, again);
  EXPECT_EQ(model.get(model::Weight::AttnQ, 0).type,
            header.find_tensor("blk.0.attn_q.weight")->type);
}

TEST(LoraMerge, F16BaseKeepsItsType) {
  check_merge(model::FileType::F16, false);
}
TEST(LoraMerge, F32BaseKeepsItsType) {
  check_merge(model::FileType::F32, false);
}
TEST(LoraMerge, QuantizedBaseWidensAdaptedWeightsToF16) {
  check_merge(model::FileType::Q8_0, false);
}
TEST(LoraMerge, QuantizedBaseRequantizedOnRequest) {
  check_merge(model::FileType::Q8_0, true);
}

TEST(LoraMerge, AdapterForAnotherModelIsRefused) {
  const auto base_image = base_bytes(model::FileType::F16);
  const auto base = gguf::GgufFile::parse(base_image);
  gguf::GgufWriter lw;
  lw.set_string("general.architecture", "qwen2");
  lw.set_string("general.type", "adapter");
  lw.set_string("adapter.type", "lora");
  lw.add_tensor("blk.0.attn_q.weight.lora_a", TensorType::F32, {256, 2},
                std::vector<uint8_t>(256 * 2 * 4));
  lw.add_tensor("blk.0.attn_q.weight.lora_b", TensorType::F32, {2, 256},
                std::vector<uint8_t>(256 * 2 * 4));
  const auto adapter = model::LoraAdapter::from_bytes(lw.serialize());
  EXPECT_THROW((void)lora_merged_header(base, adapter), model::LoraError);
}

}  // namespace
}  // namespace vkllm::runtime
