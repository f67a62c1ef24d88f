// Records llama.cpp's CPU outputs for a decoder case of tests/reference/families (README.md
// there): reads the case JSON (its "prompt"), runs the GGUF through libllama, and writes the
// case back with prompt_tokens (BOS added, special tokens parsed), last_logits after the
// prompt (decoded in batches of 128 tokens, as the families test prefills), greedy_tokens (16,
// each decoded in turn) with greedy_margins (top-1 minus top-2 logit at each step), and the
// llama_cpp block. Not built by CMake (it links llama.cpp, which the product never does):
// record_families.sh next to it builds and runs it.
//
//   record_decoder MODEL.gguf CASE.json [BACKEND_DIR]
//
// BACKEND_DIR: where ggml's loadable CPU backends live (node-llama-cpp's prebuilt binaries);
// omitted for a build with the CPU backend linked in.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ggml-backend.h"
#include "llama.h"

namespace {

constexpr int kBatch = 128;  // tokens per llama_decode of the prompt (the test's prefill chunk)
constexpr int kGreedy = 16;
constexpr const char* kCommit = "de3ff815ea7d559ee917f063901b8986f038abc6";

struct Top2 {
  int best = 0;
  float margin = 0.0f;
};

Top2 top2(const float* logits, int n) {
  int a = 0, b = 1;
  if (logits[b] > logits[a]) std::swap(a, b);
  for (int i = 2; i < n; ++i) {
    if (logits[i] > logits[a]) {
      b = a;
      a = i;
    } else if (logits[i] > logits[b]) {
      b = i;
    }
  }
  return {a, logits[a] - logits[b]};
}

void decode(llama_context* ctx, std::vector<llama_token>& tokens, int begin, int end) {
  llama_batch batch = llama_batch_get_one(tokens.data() + begin, end - begin);
  if (llama_decode(ctx, batch) != 0) throw std::runtime_error("llama_decode failed");
}

// Floats as the existing cases hold them (7 significant digits).
double rounded(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.7g", v);
  return std::stod(buf);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: record_decoder MODEL.gguf CASE.json [BACKEND_DIR]\n";
    return 2;
  }
  try {
    nlohmann::ordered_json c;
    std::ifstream(argv[2]) >> c;
    const std::string prompt = c.at("prompt").get<std::string>();
    if (argc > 3) ggml_backend_load_all_from_path(argv[3]);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model* model = llama_model_load_from_file(argv[1], mp);
    if (!model) throw std::runtime_error("cannot load the model");
    const llama_vocab* vocab = llama_model_get_vocab(model);
    const int n_vocab = llama_vocab_n_tokens(vocab);

    std::vector<llama_token> tokens(prompt.size() + 8);
    const int n = llama_tokenize(vocab, prompt.data(), static_cast<int32_t>(prompt.size()),
                                 tokens.data(), static_cast<int32_t>(tokens.size()),
                                 /*add_special=*/true, /*parse_special=*/true);
    if (n < 0) throw std::runtime_error("tokenize failed");
    tokens.resize(n);

    llama_context_params cp = llama_context_default_params();
    // 2048 as before, or room for a longer prompt and its greedy tokens (Llama 4's chunked
    // attention and temperature start at 8192 positions).
    cp.n_ctx = std::max(2048, (n + kGreedy + 255) / 256 * 256);
    // Past 2048 tokens, llama.cpp's plain attention: its CPU flash attention (f16 Q and
    // accumulators) drifts with the context, from its own plain attention by cos 0.9974 at 4k
    // tokens of a random 4-layer llama fixture, where vkllm's CPU backend and the plain path agree
    // at 0.9999997. The shorter cases were recorded with the default (flash attention on).
    if (n > 2048) cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.n_batch = kBatch;
    cp.n_ubatch = kBatch;
    llama_context* ctx = llama_init_from_model(model, cp);
    if (!ctx) throw std::runtime_error("cannot create a context");
    for (int b = 0; b < n; b += kBatch) decode(ctx, tokens, b, std::min(n, b + kBatch));

    const float* last = llama_get_logits_ith(ctx, -1);
    std::vector<double> last_logits(last, last + n_vocab);
    for (double& v : last_logits) v = rounded(static_cast<float>(v));
    std::vector<llama_token> greedy;
    std::vector<double> margins;
    std::vector<llama_token> next(1);
    const float* logits = last;
    for (int i = 0; i < kGreedy; ++i) {
      const Top2 t = top2(logits, n_vocab);
      greedy.push_back(t.best);
      margins.push_back(rounded(t.margin));
      if (i + 1 == kGreedy) break;
      next[0] = t.best;
      decode(ctx, next, 0, 1);
      logits = llama_get_logits_ith(ctx, -1);
    }

    c["llama_cpp"] = {{"commit", kCommit},
                      {"backend", "CPU"},
                      {"tool", "tests/reference/tools/record_decoder.cpp"}};
    c["prompt_tokens"] = std::vector<int>(tokens.begin(), tokens.end());
    c["greedy_tokens"] = std::vector<int>(greedy.begin(), greedy.end());
    c["greedy_margins"] = margins;
    c["last_logits"] = last_logits;
    // One top-level key a line, as the other cases are written.
    std::ofstream out(argv[2]);
    out << "{\n";
    bool first = true;
    for (const auto& [key, value] : c.items()) {
      out << (first ? "" : ",\n") << " " << nlohmann::json(key).dump() << ": " << value.dump();
      first = false;
    }
    out << "\n}\n";
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
  } catch (const std::exception& e) {
    std::cerr << "record_decoder: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
