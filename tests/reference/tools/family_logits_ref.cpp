// Records llama.cpp's CPU backend on a make-model fixture for a tests/reference/families case:
// the prompt's tokens (BOS added, special tokens parsed), the logits after the prompt, 16 greedy
// tokens (argmax, each fed back) and each step's margin (top-1 minus top-2 logit).
//
// Usage: family_logits_ref MODEL.gguf CASE.json
// CASE.json needs "prompt" (and keeps its "model" block); the results are written into it.
// Built and run by record_family_case.sh.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "llama.h"
#include "nlohmann/json.hpp"

namespace {

constexpr int kGreedySteps = 16;

struct Top2 {
  llama_token best;
  float margin;
};

Top2 top2(const float* logits, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i) best = logits[i] > logits[best] ? i : best;
  float second = -1e30f;
  for (int i = 0; i < n; ++i) {
    if (i != best) second = std::max(second, logits[i]);
  }
  return {best, logits[best] - second};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s MODEL.gguf CASE.json\n", argv[0]);
    return 2;
  }
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(argv[2]));
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) return 1;
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int n_vocab = llama_vocab_n_tokens(vocab);

  const std::string prompt = doc.at("prompt").get<std::string>();
  std::vector<llama_token> tokens(prompt.size() + 8);
  tokens.resize(static_cast<size_t>(
      llama_tokenize(vocab, prompt.data(), static_cast<int32_t>(prompt.size()), tokens.data(),
                     static_cast<int32_t>(tokens.size()), true, true)));

  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 1024;
  cp.n_batch = 1024;
  cp.n_ubatch = 1024;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) return 1;
  if (llama_decode(ctx, llama_batch_get_one(tokens.data(), static_cast<int32_t>(tokens.size())))) {
    return 1;
  }
  const float* logits = llama_get_logits_ith(ctx, -1);
  doc["prompt_tokens"] = tokens;
  doc["last_logits"] = std::vector<float>(logits, logits + n_vocab);
  std::vector<llama_token> greedy;
  std::vector<float> margins;
  for (int step = 0; step < kGreedySteps; ++step) {
    const Top2 t = top2(llama_get_logits_ith(ctx, -1), n_vocab);
    greedy.push_back(t.best);
    margins.push_back(t.margin);
    llama_token next = t.best;
    if (llama_decode(ctx, llama_batch_get_one(&next, 1))) return 1;
  }
  doc["greedy_tokens"] = greedy;
  doc["greedy_margins"] = margins;
  doc["llama_cpp"] = {{"commit", "de3ff815ea7d559ee917f063901b8986f038abc6"},
                      {"backend", "CPU"},
                      {"tool", "tests/reference/tools/family_logits_ref.cpp (greedy argmax)"}};
  std::ofstream(argv[2]) << doc.dump(1) << "\n";
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
