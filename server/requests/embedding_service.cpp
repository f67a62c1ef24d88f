#include "server/requests/embedding_service.h"

#include <algorithm>
#include <cmath>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "engine/runtime/embedder.h"
#include "server/async/run_blocking.h"
#include "server/http/status_error.h"
#include "server/requests/model_acquire.h"
#include "server/requests/prompt_facts.h"
#include "server/requests/request_options.h"
#include "server/scheduler/embedding_jobs.h"

namespace vkllm::requests {

namespace asio = boost::asio;
using std::chrono::duration_cast;
using std::chrono::nanoseconds;
using std::chrono::steady_clock;

namespace {

// Tokens of a text with the vocabulary's BOS/EOS around it, fitted to `ctx_len` tokens as
// Ollama's embed handler fits them: the specials count against the context; too long is cut
// (truncate) or an error with `status`.
std::vector<int32_t> fit_input(const tokenizer::Tokenizer& tok, const std::string& text,
                               uint32_t ctx_len, bool truncate, unsigned status) {
  std::vector<int32_t> raw = tok.encode(text, /*add_special=*/false, /*parse_special=*/true);
  const bool bos = tok.add_bos() && tok.bos() >= 0, eos = tok.add_eos() && tok.eos() >= 0;
  const int64_t limit = int64_t{ctx_len} - (bos ? 1 : 0) - (eos ? 1 : 0);
  if (limit <= 0) {
    throw http::StatusError(status, "input after truncation exceeds maximum context length");
  }
  if (static_cast<int64_t>(raw.size()) > limit) {
    if (!truncate) throw http::StatusError(status, "the input length exceeds the context length");
    raw.resize(static_cast<size_t>(limit));
  }
  std::vector<int32_t> out;
  out.reserve(raw.size() + 2);
  if (bos) out.push_back(tok.bos());
  out.insert(out.end(), raw.begin(), raw.end());
  if (eos) out.push_back(tok.eos());
  if (out.empty()) throw http::StatusError(status, "input is empty");
  return out;
}

enum class EmbedNeed { embedding, rerank };

// A generative model (no pooling type): Ollama's runner has no embeddings for it.
http::StatusError not_embedding(const std::string& model) {
  return http::StatusError(501, "\"" + model + "\" does not support embeddings");
}
// A cross-encoder's output is a relevance score, not a vector (llama.cpp refuses it too).
http::StatusError reranker(const std::string& model) {
  return http::StatusError(400, "\"" + model + "\" is a reranking model: use /api/rerank");
}
http::StatusError not_reranker(const std::string& model) {
  return http::StatusError(400, "\"" + model + "\" does not support reranking");
}

}  // namespace

void normalize_embedding(std::vector<float>& v) {
  double sum = 0;
  for (float x : v) {
    if (!std::isfinite(x)) throw http::StatusError(400, "embedding contains NaN or Inf values");
    sum += double(x) * x;
  }
  const double inv = 1.0 / std::max(std::sqrt(sum), 1e-12);
  for (float& x : v) x = static_cast<float>(x * inv);
}

struct EmbeddingService::Impl {
  GenerationService& generation;
  sched::ModelManager& models;
  asio::thread_pool& workers;
  asio::thread_pool loaders{1};  // model loads take seconds: kept off the shared workers

  ~Impl() { loaders.join(); }

  // Ollama's embed routes say "not found, try pulling it first" for an unknown model.
  asio::awaitable<registry::ModelShow> resolve(const registry::ModelName& name,
                                               const std::string& as_sent) {
    try {
      auto find = generation.resolve(name, as_sent);
      co_return co_await std::move(find);
    } catch (const http::StatusError& e) {
      if (e.status() != 404) throw;
    }
    throw http::StatusError(404, "model \"" + as_sent + "\" not found, try pulling it first");
  }

  // Refuses, before any load, a model whose capabilities (as /api/show lists them) do not
  // include what the request needs. Unread weights are not refused: their load says why.
  asio::awaitable<void> check_capability(const registry::ModelShow& show,
                                         const std::string& as_sent, EmbedNeed need) {
    auto lookup = generation.facts_for(show);
    const std::shared_ptr<const ModelFacts> facts = co_await std::move(lookup);
    const models::Capabilities& caps = facts->caps;
    if (!caps.from_weights) co_return;
    if (need == EmbedNeed::rerank) {
      if (!caps.has("rerank")) throw not_reranker(as_sent);
      co_return;
    }
    if (!caps.has("embedding")) throw not_embedding(as_sent);
    if (caps.has("rerank")) throw reranker(as_sent);
  }

  asio::awaitable<sched::ModelLease> acquire(const registry::ModelShow& show,
                                             std::optional<nanoseconds> keep_alive) {
    return acquire_model(models, loaders, show, keep_alive);
  }

  // Runs token inputs on the model's queue; the vectors in input order.
  asio::awaitable<std::vector<std::vector<float>>> run(sched::EmbeddingQueue& queue,
                                                       std::vector<std::vector<int32_t>> inputs,
                                                       unsigned failure_status) {
    auto executor = co_await asio::this_coro::executor;
    sched::EmbeddingTicket ticket = queue.submit(std::move(inputs), executor);
    // A cancellation (the client left) aborts the wait; the ticket's destructor cancels the job.
    auto wait = ticket.result();
    sched::EmbeddingOutcome outcome = co_await std::move(wait);
    if (outcome.cancelled) throw http::StatusError(499, "request cancelled");
    if (!outcome.error.empty()) {
      throw http::StatusError(outcome.unavailable ? 503 : failure_status, outcome.error);
    }
    co_return std::move(outcome.vectors);
  }
};

EmbeddingService::EmbeddingService(GenerationService& generation, sched::ModelManager& models,
                                   asio::thread_pool& workers)
    : impl_(new Impl{generation, models, workers}) {}

EmbeddingService::~EmbeddingService() = default;

asio::awaitable<EmbedResult> EmbeddingService::embed(EmbedRequest req) {
  const auto t0 = steady_clock::now();
  if (req.inputs.size() > kMaxEmbedInputs) {
    throw http::StatusError(400, "too many inputs: " + std::to_string(req.inputs.size()) +
                                     ", at most " + std::to_string(kMaxEmbedInputs) +
                                     " per request; split them over several requests");
  }
  // /api/embeddings answers every failure after the model is found with a 500.
  const unsigned failure_status = req.normalize ? 400 : 500;
  auto resolving = impl_->resolve(req.name, req.model);
  const registry::ModelShow show = co_await std::move(resolving);
  if (!req.inputs.empty()) {  // (a load request loads whatever the model is)
    auto checking = impl_->check_capability(show, req.model, EmbedNeed::embedding);
    co_await std::move(checking);
  }
  auto acquiring = impl_->acquire(show, req.keep_alive);
  sched::ModelLease lease = co_await std::move(acquiring);
  const auto t_loaded = steady_clock::now();
  EmbedResult result;
  if (req.inputs.empty()) co_return result;  // a load request: no metrics

  sched::LoadedModel& model = *lease;
  // (Weights that contradict their capabilities, e.g. a config that claims embedding.)
  if (!model.embeddings) throw not_embedding(req.model);
  sched::EmbeddingQueue& queue = *model.embeddings;
  if (queue.spec().pooling == model::Pooling::Rank) throw reranker(req.model);
  const uint64_t dims = req.dimensions > 0 && req.dimensions < queue.dimensions()
                            ? req.dimensions
                            : queue.dimensions();
  if (dims * req.inputs.size() > kMaxEmbedValues) {
    throw http::StatusError(400, "the answer would hold " + std::to_string(req.inputs.size()) +
                                     " x " + std::to_string(dims) + " values, more than " +
                                     std::to_string(kMaxEmbedValues) +
                                     "; send fewer inputs per request or ask for fewer dimensions");
  }
  const RequestOptions opts = resolve_options({&show.parameters, &req.options});
  uint32_t ctx_len = queue.max_input_tokens();
  if (opts.num_ctx && *opts.num_ctx > 0) {
    ctx_len = static_cast<uint32_t>(std::min<int64_t>(*opts.num_ctx, ctx_len));
  }

  const tokenizer::Tokenizer& tok = *model.tokenizer;
  auto tokenize = [&tok, &req, ctx_len, failure_status] {
    std::vector<std::vector<int32_t>> out;
    out.reserve(req.inputs.size());
    for (const auto& text : req.inputs) {
      out.push_back(fit_input(tok, text, ctx_len, req.truncate, failure_status));
    }
    return out;
  };
  std::vector<std::vector<int32_t>> tokens =
      co_await async::run_blocking(impl_->workers, std::move(tokenize));
  for (const auto& t : tokens) result.prompt_tokens += static_cast<uint32_t>(t.size());

  auto running = impl_->run(queue, std::move(tokens), failure_status);
  result.embeddings = co_await std::move(running);
  for (auto& v : result.embeddings) {
    if (req.normalize) {  // (failure_status is 400 here, as normalize_embedding's)
      normalize_embedding(v);
      if (req.dimensions > 0 && req.dimensions < v.size()) {
        v.resize(req.dimensions);
        normalize_embedding(v);
      }
    }
  }
  result.load_duration = duration_cast<nanoseconds>(t_loaded - t0);
  result.total_duration = duration_cast<nanoseconds>(steady_clock::now() - t0);
  co_return result;
}

asio::awaitable<RerankResult> EmbeddingService::rerank(RerankRequest req) {
  if (req.documents.size() > kMaxEmbedInputs) {
    throw http::StatusError(400, "too many documents: " + std::to_string(req.documents.size()) +
                                     ", at most " + std::to_string(kMaxEmbedInputs) +
                                     " per request; split them over several requests");
  }
  auto resolving = impl_->resolve(req.name, req.model);
  const registry::ModelShow show = co_await std::move(resolving);
  auto checking = impl_->check_capability(show, req.model, EmbedNeed::rerank);
  co_await std::move(checking);
  auto acquiring = impl_->acquire(show, req.keep_alive);
  sched::ModelLease lease = co_await std::move(acquiring);
  sched::LoadedModel& model = *lease;
  if (!model.embeddings || model.embeddings->spec().pooling != model::Pooling::Rank) {
    throw not_reranker(req.model);
  }
  sched::EmbeddingQueue& queue = *model.embeddings;
  const tokenizer::Tokenizer& tok = *model.tokenizer;
  const uint32_t limit = queue.max_input_tokens();
  auto tokenize = [&tok, &req, limit] {
    std::vector<int32_t> query = tok.encode(req.query, false, true);
    std::vector<std::vector<int32_t>> pairs;
    for (const auto& doc : req.documents) {
      std::vector<int32_t> d = tok.encode(doc, false, true);
      std::vector<int32_t> pair = runtime::rerank_input(tok, query, d);
      // Too long: the document gives way first, then the query.
      if (pair.size() > limit) {
        const size_t over = pair.size() - limit;
        d.resize(d.size() > over ? d.size() - over : 0);
        pair = runtime::rerank_input(tok, query, d);
        if (pair.size() > limit) {
          std::vector<int32_t> q(query.begin(),
                                 query.end() - std::min(query.size(), pair.size() - limit));
          pair = runtime::rerank_input(tok, q, d);
        }
      }
      pairs.push_back(std::move(pair));
    }
    return pairs;
  };
  std::vector<std::vector<int32_t>> pairs =
      co_await async::run_blocking(impl_->workers, std::move(tokenize));
  RerankResult result;
  for (const auto& p : pairs) result.prompt_tokens += static_cast<uint32_t>(p.size());
  auto running = impl_->run(queue, std::move(pairs), 500);
  const std::vector<std::vector<float>> scores = co_await std::move(running);
  for (size_t i = 0; i < scores.size(); ++i) {
    result.results.push_back({static_cast<uint32_t>(i), scores[i].at(0)});
  }
  std::stable_sort(result.results.begin(), result.results.end(), [](const auto& a, const auto& b) {
    return a.relevance_score > b.relevance_score;
  });
  if (req.top_n && *req.top_n < result.results.size()) result.results.resize(*req.top_n);
  co_return result;
}

}  // namespace vkllm::requests
