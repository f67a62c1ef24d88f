// The model shapes make-model knows by name, and WxLxHxKV ones (model_maker.h).
#include <charconv>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/model_maker.h"

namespace vkllm::model {

namespace {

// ---------------------------------------------------------------------------------------------
// Shapes

struct NamedShape {
  std::string_view name;
  ModelShape shape;
};

// The published configurations of these models (vocabulary sizes come from the vocab file).
const NamedShape kNamedShapes[] = {
    {"tiny", {256, 2, 4, 2, 64, 768, 2048, false, 0.0f, 0.0f}},
    {"test", {256, 2, 4, 2, 64, 768, 2048, false, 0.0f, 0.0f, 8, 2, 256, 16}},
    // test with 7 layers: Gemma's five local layers, a global one, a local one again (llama.cpp
    // refuses a gemma-embedding whose layers are all local).
    {"test-swa", {256, 7, 4, 2, 64, 768, 2048, false, 0.0f, 0.0f, 8, 2, 256, 16}},
    {"llama3.2-1b", {2048, 16, 32, 8, 64, 8192, 131072, true, 500000.0f, 32.0f}},
    {"llama3.1-8b", {4096, 32, 32, 8, 128, 14336, 131072, false, 500000.0f, 8.0f}},
    {"qwen2.5-0.5b", {896, 24, 14, 2, 64, 4864, 32768, true, 1000000.0f, 0.0f}},
    {"qwen3-30b-a3b", {2048, 48, 32, 4, 128, 6144, 40960, false, 1000000.0f, 0.0f, 128, 8, 768}},
    // gpt-oss-20b (its config.json): 32 experts of width 2880, 4 per token, a window of 128.
    {"gpt-oss-20b", {2880, 24, 64, 8, 64, 2880, 131072, false, 150000.0f, 0.0f, 32, 4, 2880, 128}},
    {"llama3.1-70b", {8192, 80, 64, 8, 128, 28672, 131072, false, 500000.0f, 8.0f}},
    {"ministral3-3b", {3072, 26, 32, 8, 128, 9216, 262144, true, 1000000.0f, 0.0f}},
    {"ministral3-8b", {4096, 34, 32, 8, 128, 14336, 262144, false, 1000000.0f, 0.0f}},
    // The vision benchmarks' text models (their config.json): Gemma 3 4B (window 1024) and
    // Qwen2.5-VL 7B.
    {"gemma3-4b", {2560, 34, 8, 4, 256, 10240, 131072, true, 1000000.0f, 0.0f, 0, 0, 0, 1024}},
    {"qwen2.5-vl-7b", {3584, 28, 28, 4, 128, 18944, 128000, false, 1000000.0f, 0.0f}},
    // Qwen3-VL 8B (its config.json's text_config: rope base 5e6; the text arch is qwen3vl).
    {"qwen3-vl-8b", {4096, 36, 32, 8, 128, 12288, 262144, false, 5000000.0f, 0.0f}},
    {"embeddinggemma-300m", {768, 24, 3, 1, 256, 1152, 2048, true, 1000000.0f, 0.0f, 0, 0, 0, 512}},
    {"lfm2-1.2b", {2048, 16, 32, 8, 64, 8192, 128000, true, 1000000.0f, 0.0f}},
    // test with 25 layers: deep enough for Gemma 3n's KV sharing (layers 20-24 reuse the caches
    // of a local and a global layer) and its sparse first 10 layers.
    {"test-deep", {256, 25, 4, 2, 64, 768, 2048, false, 0.0f, 0.0f, 8, 2, 256, 16}},
    // test-deep and test-swa at half the width (a quarter of their products): cheap enough for
    // lavapipe's Gemma 3n cases.
    {"test-deep-narrow", {128, 25, 2, 1, 64, 384, 2048, false, 0.0f, 0.0f, 8, 2, 256, 16}},
    {"test-swa-narrow", {128, 7, 2, 1, 64, 384, 2048, false, 0.0f, 0.0f, 8, 2, 256, 16}},
    // Gemma 3n E2B / E4B (their config.json's text_config; head size 256).
    {"gemma3n-e2b", {2048, 30, 8, 2, 256, 8192, 32768, true, 1000000.0f, 0.0f, 0, 0, 0, 512}},
    {"gemma3n-e4b", {2048, 35, 8, 2, 256, 16384, 32768, true, 1000000.0f, 0.0f, 0, 0, 0, 512}},
    // Gemma 4 E2B (its config.json's text_config; local heads 256 wide, global ones 512).
    {"gemma4-e2b", {1536, 35, 8, 1, 256, 6144, 131072, true, 1000000.0f, 0.0f, 0, 0, 0, 512}},
    // test-swa as the MoE variant of a family that has both (gemma4), and Gemma 4 26B-A4B: 128
    // experts of width 704, 8 per token, beside a dense FFN of 2112.
    {"test-moe",
     {256, 7, 4, 2, 64, 768, 2048, false, 0.0f, 0.0f, 8, 2, 256, 16, /*moe_variant=*/true}},
    // test-moe at half the width for lavapipe's Gemma 4 MoE cases, with two K/V heads (so that
    // Gemma 4's global layers, which get half the local count, have fewer) and experts of 128.
    {"test-moe-narrow",
     {128, 7, 2, 2, 64, 384, 2048, false, 0.0f, 0.0f, 8, 2, 128, 16, /*moe_variant=*/true}},
    // Two layers 512 wide with two heads of 256 and one K/V head, window 16: for gemma4 a local
    // layer and a global one with heads of 512, as the published models have (attn_v on it,
    // per-layer inputs 256 wide), small enough for lavapipe.
    {"test-heads-256", {512, 2, 2, 1, 256, 1024, 2048, false, 0.0f, 0.0f, 0, 0, 0, 16}},
    {"gemma4-26b-a4b",
     {2816, 30, 16, 8, 256, 2112, 262144, true, 1000000.0f, 0.0f, 128, 8, 704, 1024, true}},
    // Qwen3.5-4B (its config.json's text_config; head size 256, tied; make-model's qwen35 adds
    // the DeltaNet sizes: 16 key and 32 value heads of 128).
    {"qwen35-4b", {2560, 32, 16, 4, 256, 9216, 262144, true, 10000000.0f, 0.0f}},
    // Qwen3.5-35B-A3B (qwen35moe: 256 experts of 512, 8 per token, a shared expert of 512;
    // DeltaNet: 16 key and 32 value heads of 128) and Qwen3-Next-80B-A3B (qwen3next: 512 experts
    // of 512, 10 per token, a shared expert of 512; the same DeltaNet sizes).
    // Granite 4.0-H Tiny (granitehybrid's MoE variant: 64 experts of 512, 6 per token, a shared
    // expert of 1024; Mamba-2: 48 heads of 64, state 128, one group).
    {"granite-4.0-h-tiny",
     {1536, 40, 12, 4, 128, 512, 131072, true, 10000.0f, 0.0f, 64, 6, 512, 0, true, 1024}},
    {"qwen35-35b-a3b",
     {2048, 40, 16, 2, 256, 512, 262144, false, 10000000.0f, 0.0f, 256, 8, 512, 0, false, 512}},
    {"qwen3-next-80b-a3b",
     {2048, 48, 16, 2, 256, 5120, 262144, false, 10000000.0f, 0.0f, 512, 10, 512, 0, false, 512}},
    // Granite 4.0-H Micro (dense: 40 layers, 4 of them attention; make-model's granitehybrid adds
    // the Mamba-2 sizes: 64 heads of 64, state 128, one group) and Nemotron-H 8B (52 layers of
    // mixers, attention and relu^2 FFNs; 128 Mamba heads of 64, state 128, 8 groups).
    {"granite-4.0-h-micro", {2048, 40, 32, 8, 64, 8192, 1048576, false, 10000.0f, 0.0f}},
    {"nemotron-h-8b", {4096, 52, 32, 8, 128, 21504, 8192, false, 10000.0f, 0.0f}},
    // Nemotron 3 Nano 30B-A3B (nemotron_h_moe, its config.json: 52 layers in its
    // hybrid_override_pattern, 128 experts of 1856, 6 per token, a shared expert of 3712; Mamba-2:
    // 64 heads of 64, state 128, 8 groups; attention 32 heads of 128, 2 K/V heads).
    // test as Nemotron 3 Super's kind of nemotron_h_moe: the experts in a latent width of 128.
    {"test-latent",
     {256, 2, 4, 2, 64, 768, 2048, false, 0.0f, 0.0f, 8, 2, 256, 16, false, 0, 0, 128}},
    {"nemotron-3-nano-30b-a3b",
     {2688, 52, 32, 2, 128, 1856, 262144, false, 10000.0f, 0.0f, 128, 6, 1856, 0, true, 3712,
      4096}},
    // Llama 4 Scout 17B-16E (its config.json's text_config: dense width 16384, 16 experts of
    // 8192, one per token, every layer MoE; Llama 3.1-style rope_freqs for its factor 16).
    {"llama4-scout", {5120, 48, 40, 8, 128, 16384, 10485760, false, 500000.0f, 16.0f, 16, 1, 8192}},
};

uint32_t parse_dimension(std::string_view text, std::string_view what, std::string_view whole) {
  uint32_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v == 0) {
    throw std::invalid_argument("model shape '" + std::string(whole) + "': " + std::string(what) +
                                " '" + std::string(text) + "' is not a positive integer");
  }
  return v;
}

}  // namespace

ModelShape parse_model_shape(std::string_view text) {
  const size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  for (const auto& n : kNamedShapes) {
    if (n.name != name) continue;
    ModelShape s = n.shape;
    if (colon != std::string_view::npos)
      s.n_layer = parse_dimension(text.substr(colon + 1), "layer count", text);
    return s;
  }
  if (colon != std::string_view::npos)
    throw std::invalid_argument("model shape '" + std::string(text) + "': '" + std::string(name) +
                                "' is not a named shape");
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t x = text.find('x', start);
    parts.push_back(text.substr(start, x == std::string_view::npos ? x : x - start));
    if (x == std::string_view::npos) break;
    start = x + 1;
  }
  if (parts.size() != 4) {
    std::string names;
    for (const auto& n : kNamedShapes) names += (names.empty() ? "" : ", ") + std::string(n.name);
    throw std::invalid_argument("model shape '" + std::string(text) +
                                "' is neither a named shape (" + names +
                                ", each optionally :LAYERS) nor WxLxHxKV (n_embd x n_layer x "
                                "n_head x n_head_kv)");
  }
  ModelShape s;
  s.n_embd = parse_dimension(parts[0], "n_embd", text);
  s.n_layer = parse_dimension(parts[1], "n_layer", text);
  s.n_head = parse_dimension(parts[2], "n_head", text);
  s.n_head_kv = parse_dimension(parts[3], "n_head_kv", text);
  if (s.n_embd % s.n_head != 0 || (s.n_embd / s.n_head) % 2 != 0) {
    throw std::invalid_argument("model shape '" + std::string(text) + "': n_embd " +
                                std::to_string(s.n_embd) + " must split into n_head " +
                                std::to_string(s.n_head) + " heads of even size");
  }
  if (s.n_head % s.n_head_kv != 0) {
    throw std::invalid_argument("model shape '" + std::string(text) + "': n_head " +
                                std::to_string(s.n_head) + " is not a multiple of n_head_kv " +
                                std::to_string(s.n_head_kv));
  }
  s.head_dim = s.n_embd / s.n_head;
  // The usual SwiGLU width, 8/3 of n_embd, rounded up like Llama's to a multiple of 256.
  s.n_ff = (8 * s.n_embd / 3 + 255) / 256 * 256;
  return s;
}

}  // namespace vkllm::model
