// Records llama.cpp's tokenizer on a GGUF for tests/reference/gemma4tok/tokens.json: for each
// case's text the ids with BOS added and special tokens parsed ("special"), with neither
// ("plain"), and the text llama_token_to_piece gives back for the "special" ids ("pieces": control
// tokens render as nothing); and the vocabulary's end-of-generation ids ("eog"), BOS and add-BOS.
//
// Usage: gemma4_tokens_ref CASES.json MODEL_OR_VOCAB.gguf OUT.json
// (built and run by record_gemma4_tokens.sh; CASES.json needs only "cases": [{"text": ...}]).
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "llama.h"
#include "nlohmann/json.hpp"

namespace {

std::vector<llama_token> tokenize(const llama_vocab* vocab, const std::string& text, bool add,
                                  bool parse) {
  std::vector<llama_token> ids(text.size() + 8);
  int n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), ids.data(),
                         static_cast<int32_t>(ids.size()), add, parse);
  if (n < 0) {
    ids.resize(static_cast<size_t>(-n));
    n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), ids.data(),
                       static_cast<int32_t>(ids.size()), add, parse);
  }
  ids.resize(static_cast<size_t>(n));
  return ids;
}

std::string pieces(const llama_vocab* vocab, const std::vector<llama_token>& ids) {
  std::string out;
  for (llama_token id : ids) {
    char buf[256];
    const int n = llama_token_to_piece(vocab, id, buf, sizeof(buf), 0, /*special=*/false);
    if (n > 0) out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s CASES.json MODEL_OR_VOCAB.gguf OUT.json\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1]);
  nlohmann::json doc = nlohmann::json::parse(in);
  llama_backend_init();
  llama_model_params params = llama_model_default_params();
  params.vocab_only = true;
  llama_model* model = llama_model_load_from_file(argv[2], params);
  if (!model) {
    std::fprintf(stderr, "cannot load %s\n", argv[2]);
    return 1;
  }
  const llama_vocab* vocab = llama_model_get_vocab(model);
  for (auto& c : doc.at("cases")) {
    const std::string text = c.at("text").get<std::string>();
    const auto special = tokenize(vocab, text, true, true);
    c["special"] = special;
    c["plain"] = tokenize(vocab, text, false, false);
    c["pieces"] = pieces(vocab, special);
  }
  std::vector<llama_token> eog;
  for (llama_token id = 0; id < llama_vocab_n_tokens(vocab); ++id) {
    if (llama_vocab_is_eog(vocab, id)) eog.push_back(id);
  }
  doc["eog"] = eog;
  doc["bos"] = llama_vocab_bos(vocab);
  doc["add_bos"] = llama_vocab_get_add_bos(vocab);
  doc["llama_cpp"] = "node-llama-cpp 3.22.1 source bundle (de3ff815), llama_tokenize";
  std::ofstream(argv[3]) << doc.dump(1) << "\n";
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
