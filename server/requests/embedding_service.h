// Embedding and rerank requests end to end, shared by the Ollama, OpenAI and rerank routes:
// resolve the model, acquire it (loading it if needed, keep_alive as Ollama), tokenize each
// input with the model's special tokens, fit it to the context (truncate, or fail as Ollama
// does), queue the inputs on the model's EmbeddingQueue (its engine thread), and finish the
// vectors as Ollama does (L2-normalise with the norm clamped at 1e-12, NaN/Inf is an error,
// `dimensions` keeps a prefix and re-normalises). Rerank formats (query, document) pairs for the
// model's cross-encoder and orders the documents by score. Errors are http::StatusErrors
// carrying Ollama's status and message; the server answers them in each API's shape.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>
#include <nlohmann/json.hpp>

#include "registry/model_name.h"
#include "server/requests/generation.h"
#include "server/scheduler/model_manager.h"

namespace vkllm::requests {

// At most this many inputs (or rerank documents) in one request, as OpenAI limits them: more
// would hold the model's queue, and the answer's memory, for everyone else.
inline constexpr size_t kMaxEmbedInputs = 2048;
// At most this many numbers in one answer (inputs x dimensions, 2048 x 4096): its text is
// about 12 bytes a number.
inline constexpr uint64_t kMaxEmbedValues = uint64_t{2048} * 4096;

struct EmbedRequest {
  std::string model;  // as the client sent it (echoed back, used in messages)
  registry::ModelName name;
  std::vector<std::string> inputs;
  bool truncate = true;
  bool normalize = true;    // /api/embeddings (legacy) returns raw vectors
  uint32_t dimensions = 0;  // 0: all; else keep that many components (and re-normalise)
  nlohmann::ordered_json options = nlohmann::ordered_json::object();
  std::optional<std::chrono::nanoseconds> keep_alive;
};

struct EmbedResult {
  std::vector<std::vector<float>> embeddings;  // one per input, in order
  uint32_t prompt_tokens = 0;
  std::chrono::nanoseconds total_duration{0}, load_duration{0};
};

struct RerankRequest {
  std::string model;
  registry::ModelName name;
  std::string query;
  std::vector<std::string> documents;
  std::optional<uint32_t> top_n;  // default: every document
  std::optional<std::chrono::nanoseconds> keep_alive;
};

struct RerankResult {
  struct Item {
    uint32_t index;         // into the request's documents
    float relevance_score;  // the cross-encoder's raw score (as llama.cpp's server)
  };
  std::vector<Item> results;  // best first, at most top_n
  uint32_t prompt_tokens = 0;
};

class EmbeddingService {
 public:
  EmbeddingService(GenerationService& generation, sched::ModelManager& models,
                   boost::asio::thread_pool& workers);
  ~EmbeddingService();

  // Cancelled through the awaiting coroutine's cancellation slot (http/until_disconnect.h): the
  // inputs still queued are dropped and the call throws operation_aborted.
  boost::asio::awaitable<EmbedResult> embed(EmbedRequest request);
  boost::asio::awaitable<RerankResult> rerank(RerankRequest request);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Ollama's normalisation: v / max(|v|, 1e-12). Throws http::StatusError(400) for NaN or Inf.
void normalize_embedding(std::vector<float>& v);

}  // namespace vkllm::requests
