// Records llama.cpp's CPU backend running a Qwen3.5 fixture's multi-token-prediction (NextN)
// block as its speculative drafter does (common/speculative.cpp, draft-mtp): the prompt through
// the model with every position's hidden state after the output norm (h_nextn); the block over
// the prompt's tokens with those states shifted by one (token p reads the state of p - 1, zeros
// before the first), filling its own KV cache; then, from the model's greedy next token and the
// last prompt position's state, kDraftSteps greedy draft steps, each feeding the drafted token
// and the block's own h_nextn back. Writes prompt_tokens, last_logits, greedy_tokens (the model's)
// (and their margins) and mtp: first_logits (the first draft step's), draft_tokens,
// draft_margins into the case.
//
// Usage: mtp_draft_ref MODEL.gguf CASE.json (built and run by record_family_case.sh).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "llama-ext.h"
#include "llama.h"
#include "nlohmann/json.hpp"

namespace {

constexpr int kGreedySteps = 16;
constexpr int kDraftSteps = 4;

std::pair<llama_token, float> top2(const float* logits, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i) best = logits[i] > logits[best] ? i : best;
  float second = -1e30f;
  for (int i = 0; i < n; ++i)
    if (i != best) second = std::max(second, logits[i]);
  return {best, logits[best] - second};
}

// A batch of token ids that also carries one hidden row per token (llama.cpp's MTP batches).
struct MtpBatch {
  llama_batch b;
  explicit MtpBatch(int n, int n_embd) {
    b = llama_batch_init(n, n_embd, 1);
    b.token = static_cast<llama_token*>(std::malloc(sizeof(llama_token) * n));
  }
  ~MtpBatch() {
    std::free(b.token);
    b.token = nullptr;
    llama_batch_free(b);
  }
  void add(llama_token t, llama_pos pos, const float* h, int n_embd, bool logits) {
    const int i = b.n_tokens++;
    b.token[i] = t;
    b.pos[i] = pos;
    b.n_seq_id[i] = 1;
    b.seq_id[i][0] = 0;
    b.logits[i] = logits;
    std::memcpy(b.embd + static_cast<size_t>(i) * n_embd, h, sizeof(float) * n_embd);
  }
};

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
  mp.load_mtp = true;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) return 1;
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int n_vocab = llama_vocab_n_tokens(vocab);
  const int n_embd = llama_model_n_embd(model);

  const std::string prompt = doc.at("prompt").get<std::string>();
  std::vector<llama_token> tokens(prompt.size() + 8);
  tokens.resize(static_cast<size_t>(
      llama_tokenize(vocab, prompt.data(), static_cast<int32_t>(prompt.size()), tokens.data(),
                     static_cast<int32_t>(tokens.size()), true, true)));
  const int n = static_cast<int>(tokens.size());

  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 1024;
  cp.n_batch = 1024;
  cp.n_ubatch = 1024;
  cp.n_threads = 2;
  llama_context* tgt = llama_init_from_model(model, cp);
  llama_context_params dp = cp;
  dp.ctx_type = LLAMA_CONTEXT_TYPE_MTP;
  dp.ctx_other = tgt;
  dp.n_rs_seq = 0;
  llama_context* dft = llama_init_from_model(model, dp);
  if (!tgt || !dft) return 1;
  llama_set_embeddings_nextn(tgt, true, /*masked=*/false);
  llama_set_embeddings_nextn(dft, true, /*masked=*/true);

  // The prompt through the model: every position's h_nextn, the logits after the last.
  llama_batch pb = llama_batch_init(n, 0, 1);
  for (int i = 0; i < n; ++i) {
    pb.token[i] = tokens[i];
    pb.pos[i] = i;
    pb.n_seq_id[i] = 1;
    pb.seq_id[i][0] = 0;
    pb.logits[i] = i == n - 1;
  }
  pb.n_tokens = n;
  if (llama_decode(tgt, pb) != 0) return 1;
  llama_batch_free(pb);
  const std::vector<float> h(llama_get_embeddings_nextn(tgt),
                             llama_get_embeddings_nextn(tgt) + static_cast<size_t>(n) * n_embd);
  const float* last = llama_get_logits_ith(tgt, -1);
  doc["prompt_tokens"] = tokens;
  doc["last_logits"] = std::vector<float>(last, last + n_vocab);
  const llama_token next = top2(last, n_vocab).first;

  // The block over the prompt: token p with the state of p - 1 (zeros before the first).
  {
    MtpBatch mb(n, n_embd);
    const std::vector<float> zeros(n_embd, 0.0f);
    for (int i = 0; i < n; ++i)
      mb.add(tokens[i], i, i == 0 ? zeros.data() : h.data() + static_cast<size_t>(i - 1) * n_embd,
             n_embd, false);
    if (llama_decode(dft, mb.b) != 0) return 1;
  }
  // Drafts: the model's next token with the last prompt state, then each draft with the block's.
  nlohmann::json mtp;
  std::vector<llama_token> drafts;
  std::vector<float> margins, hrow(h.end() - n_embd, h.end());
  llama_token tok = next;
  for (int k = 0; k < kDraftSteps; ++k) {
    MtpBatch mb(1, n_embd);
    mb.add(tok, n + k, hrow.data(), n_embd, true);
    if (llama_decode(dft, mb.b) != 0) return 1;
    const float* lg = llama_get_logits_ith(dft, 0);
    if (k == 0) mtp["first_logits"] = std::vector<float>(lg, lg + n_vocab);
    const auto [best, margin] = top2(lg, n_vocab);
    drafts.push_back(best);
    margins.push_back(margin);
    const float* hn = llama_get_embeddings_nextn_ith(dft, 0);
    hrow.assign(hn, hn + n_embd);
    tok = best;
  }
  mtp["draft_tokens"] = drafts;
  mtp["draft_margins"] = margins;
  doc["mtp"] = mtp;

  // The model's greedy continuation.
  std::vector<llama_token> greedy{next};
  std::vector<float> greedy_margins{top2(last, n_vocab).second};
  for (int i = 1; i < kGreedySteps; ++i) {
    llama_batch one = llama_batch_get_one(&greedy.back(), 1);
    if (llama_decode(tgt, one) != 0) return 1;
    const auto [best, margin] = top2(llama_get_logits_ith(tgt, -1), n_vocab);
    greedy.push_back(best);
    greedy_margins.push_back(margin);
  }
  doc["greedy_tokens"] = greedy;
  doc["greedy_margins"] = greedy_margins;
  doc["llama_cpp"] = "node-llama-cpp 3.22.1 (llama.cpp de3ff81), CPU, draft-mtp's steps";
  std::ofstream(argv[2]) << doc.dump(1) << "\n";
  llama_free(dft);
  llama_free(tgt);
  llama_model_free(model);
  return 0;
}
