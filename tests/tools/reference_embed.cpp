// The scalar reference's embeddings and rerank scores for an embedding GGUF (an encoder, or a
// decoder with last-token pooling), as JSON on stdout, so
// integration tests can check what the server answers against a forward pass that shares no
// code with the Vulkan engine:
//   reference_embed MODEL.gguf embed TEXT...          -> [[unit-norm floats], ...]
//   reference_embed MODEL.gguf rerank QUERY DOC...    -> [score, ...]
// Texts are tokenized as the server tokenizes them (the model's BOS/EOS around each input; rerank
// pairs as runtime::rerank_input builds them).
#include <cmath>
#include <cstdio>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/gguf/gguf_file.h"
#include "engine/runtime/embedder.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/reference/reference_encoder.h"
#include "tests/reference/reference_forward.h"

int main(int argc, char** argv) {
  using namespace vkllm;
  if (argc < 4) {
    std::fprintf(stderr, "usage: reference_embed MODEL.gguf embed|rerank TEXT...\n");
    return 2;
  }
  try {
    const auto file = gguf::GgufFile::open(argv[1]);
    const auto tok = tokenizer::Tokenizer::from_gguf(file);
    const model::ModelSpec spec = model::ModelSpec::from_gguf(file);
    if (!spec.is_encoder() && spec.pooling != model::Pooling::Last) {
      throw std::runtime_error("decoders: only last-token pooling is supported here");
    }
    std::optional<reference::ReferenceEncoder> encoder;
    std::optional<reference::ReferenceModel> decoder;
    // EmbeddingGemma is an encoder made of decoder layers: the decoder reference's embed().
    if (spec.is_encoder() && !spec.decoder_layers()) {
      encoder.emplace(file);
    } else {
      decoder.emplace(file, reference::ReferenceModel::EngineRounding{});
    }
    auto embed = [&](const std::vector<int32_t>& tokens) {
      if (encoder) return encoder->embed(tokens);
      if (spec.decoder_layers()) return decoder->embed(tokens);
      decoder->reset();
      return decoder->hidden_states(tokens).back();
    };
    const std::string mode = argv[2];
    nlohmann::json out = nlohmann::json::array();
    if (mode == "embed") {
      for (int i = 3; i < argc; ++i) {
        std::vector<float> v = embed(tok->encode(argv[i], /*add_special=*/true, true));
        double sum = 0;
        for (float x : v) sum += double(x) * x;
        const double inv = 1.0 / std::max(std::sqrt(sum), 1e-12);
        for (float& x : v) x = static_cast<float>(x * inv);
        out.push_back(v);
      }
    } else if (mode == "rerank") {
      const auto query = tok->encode(argv[3], false, true);
      for (int i = 4; i < argc; ++i) {
        const auto pair = runtime::rerank_input(*tok, query, tok->encode(argv[i], false, true));
        out.push_back(embed(pair).at(0));
      }
    } else {
      std::fprintf(stderr, "reference_embed: unknown mode %s\n", mode.c_str());
      return 2;
    }
    std::printf("%s\n", out.dump().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "reference_embed: %s\n", e.what());
    return 1;
  }
  return 0;
}
