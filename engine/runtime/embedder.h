// Embeddings (and cross-encoder scores) for a batch of tokenized inputs, whatever runs the model:
// an Encoder for bert-family models, a Runner's hidden states (after the final norm, no LM head)
// for decoders used as embedders (Qwen3-Embedding: causal, last-token pooling). Inputs are packed
// into as few steps as the limits allow, outputs are pooled as the model's pooling_type says and
// are NOT normalised (the API layer normalises, as Ollama does).
//
// Decoder passes use temporary block tables: their blocks return to the pool when an input is
// done (full blocks stay in the prefix cache like any causal prompt's; encoders have no cache).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "engine/model/model_spec.h"
#include "engine/runtime/encoder.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "engine/tokenizer/tokenizer.h"

namespace vkllm::runtime {

struct EmbedderOptions {
  uint32_t max_batch_tokens = 2048;  // tokens per step
  uint32_t max_inputs = 64;          // inputs per step
  uint32_t matvec_max_batch = 16;    // RunnerOptions::matvec_max_batch, for the encoder's products
  // Encoders: create every pipeline a step can use at construction (tests may skip it).
  bool warm_up = true;
};

class Embedder {
 public:
  // Encoder models get an Encoder, decoders a Runner of their own sized for these limits.
  explicit Embedder(Model& model, const EmbedderOptions& options = {});
  // The same on the CPU backend; `model` must outlive the Embedder.
  explicit Embedder(const HostModel& model, const EmbedderOptions& options = {});
  // A decoder model through an existing Runner (e.g. the one that serves its generation), sharing
  // its KV pool. The runner must outlive the Embedder.
  explicit Embedder(Runner& runner);
  ~Embedder();
  Embedder(const Embedder&) = delete;
  Embedder& operator=(const Embedder&) = delete;

  const model::ModelSpec& spec() const { return spec_; }
  model::Pooling pooling() const { return spec_.pooling; }
  // Floats per pooled output: n_embd, or the rank head's outputs; per token with pooling none.
  uint32_t dimensions() const {
    return spec_.pooling == model::Pooling::None ? spec_.n_embd : spec_.n_embd_out();
  }
  // The longest input embed() accepts (callers truncate to it).
  uint32_t max_input_tokens() const;
  // What one step takes (inputs of one embed() call beyond it run in several steps).
  const EmbedderOptions& options() const { return options_; }
  // Device memory of the Embedder's own buffers (activations, K/V), not the weights.
  uint64_t device_bytes() const;

  // Per input, in order: its pooled vector, or with pooling none its tokens' hidden states
  // (n_tokens x n_embd, row-major). Throws std::invalid_argument for an empty input, one longer
  // than max_input_tokens() or a token outside the vocabulary.
  std::vector<std::vector<float>> embed(std::span<const std::vector<int32_t>> inputs);

  // Cross-encoder relevance scores (the rank head's first output) for inputs made by
  // rerank_input(). Throws std::logic_error unless the model's pooling is rank.
  std::vector<float> rerank(std::span<const std::vector<int32_t>> pairs);

 private:
  // The constructors' shared part: an Encoder or an own Runner over `model`.
  template <class M>
  void start(M& model);
  std::vector<std::vector<float>> embed_decoder(std::span<const std::vector<int32_t>> inputs);

  model::ModelSpec spec_;
  EmbedderOptions options_;
  std::unique_ptr<Encoder> encoder_;
  std::unique_ptr<Runner> own_runner_;
  Runner* runner_ = nullptr;
};

// The token sequence a cross-encoder scores for a (query, document) pair, as llama.cpp's server
// builds it: BOS query EOS [SEP] document EOS, with the vocabulary's own special tokens
// (WordPiece: [CLS] query [SEP] document [SEP]; RoBERTa-style: <s> query </s></s> document </s>).
std::vector<int32_t> rerank_input(const tokenizer::Tokenizer& tokenizer,
                                  std::span<const int32_t> query,
                                  std::span<const int32_t> document);

}  // namespace vkllm::runtime
