// One generation request end to end, shared by the Ollama, OpenAI and Anthropic routes, in named
// steps: resolve the name and check the model's capabilities (capability_check.h); take a place
// in the wait queue (queue_slot.h); acquire the model, loading it if needed (model_acquire.h,
// shared with embeddings); build the prompt with its template and tokenize it, then fit it into
// the context (prompt_tokens.h, by the scheduler's context-shift rule); compile the output's
// constraint; submit to the model's scheduler; and turn the token stream into text chunks
// (reply_text.h: detokenizer, stop strings, output parser, runaway guard) with Ollama's timings.
// The routes only map JSON to GenerationRequest and GenerationChunk back to JSON.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>
#include <nlohmann/json.hpp>

#include "engine/sampling/format_spec.h"
#include "engine/vision/image_prompt.h"
#include "registry/model_store.h"
#include "server/prompt/prompt.h"
#include "server/requests/service_options.h"
#include "server/requests/tool_choice.h"
#include "server/scheduler/model_manager.h"

namespace vkllm::sampling {
class CompiledFormat;
}

namespace vkllm::requests {

struct GenerationRequest {
  enum class Kind { chat, generate };
  Kind kind = Kind::chat;
  std::string model;  // as the client sent it (echoed back)
  registry::ModelName name;
  prompt::ChatInput chat;          // kind chat
  prompt::GenerateInput generate;  // kind generate
  bool raw = false;                // generate: the prompt verbatim
  std::vector<int32_t> context;    // generate: legacy context tokens
  nlohmann::ordered_json format;   // null, "json" or a JSON Schema (property order kept)
  // A GBNF grammar, regex or choice (llama.cpp's `grammar`, vLLM's structured_outputs); wins
  // over `format`.
  std::optional<sampling::FormatSpec> constraint;
  ToolChoice tool_choice;  // chat: a forced choice wins over both

  nlohmann::ordered_json options = nlohmann::ordered_json::object();
  std::optional<std::chrono::nanoseconds> keep_alive;
  bool logprobs = false;
  int top_logprobs = 0;
  std::optional<bool> shift;
  bool debug_render_only = false;
  // Thinking asked of a model without the capability is dropped instead of refused (Anthropic's
  // `thinking`, as Ollama's /v1/messages treats it: Claude Code asks it of every model).
  bool think_if_capable = false;
};

struct TokenLogprobText {
  std::string token;
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;
};

struct GenerationChunk {
  std::string content;
  std::string thinking;
  std::vector<prompt::ToolCall> tool_calls;
  std::vector<TokenLogprobText> logprobs;
  bool done = false;
  std::string done_reason;  // final chunk: stop, length, load, unload
  // Final chunk only (nanoseconds; zero ones are left out by the routes).
  std::chrono::nanoseconds total_duration{0}, load_duration{0}, prompt_eval_duration{0},
      eval_duration{0};
  uint32_t prompt_eval_count = 0;    // prompt tokens evaluated (prefix-cache hits excluded)
  uint32_t prompt_cached_count = 0;  // prompt tokens served from the prefix cache
  uint32_t eval_count = 0;
  std::string stop_sequence;     // final chunk: the stop string that ended generation, if one did
  std::vector<int32_t> context;  // generate, non-raw
  // _debug_render_only
  std::optional<std::string> rendered_template;
  size_t image_count = 0;
};

// Takes the chunk by reference: GCC 12 mishandles by-value temporaries in co_await expressions.
using ChunkSink = std::function<boost::asio::awaitable<void>(GenerationChunk&)>;

struct ModelFacts;    // what a request needs to know about a model before loading it
struct PromptTokens;  // prompt_tokens.h

class GenerationService {
 public:
  GenerationService(registry::ModelStore& store, sched::ModelManager& models,
                    boost::asio::thread_pool& workers, ServiceOptions options = {});
  ~GenerationService();  // join_loaders()
  // Waits for model loads in flight (shutdown, before the requests' executor goes).
  void join_loaders();

  // Runs a request; every chunk goes through `sink`, the last with done = true. Fails (before the
  // first chunk or after it, when the route ends the stream with an error line or event) with
  // http::StatusError, or with the engine's or the template's own error, which
  // http::status_error_of maps. Cancelled through Asio's cancellation slot of the awaiting
  // coroutine (http/until_disconnect.h): the sequence is dropped and no further chunk is sent.
  boost::asio::awaitable<void> run(GenerationRequest request, ChunkSink sink);

  // The tokens the prompt of a chat `request` takes, rendered with the model's template without
  // truncation, from its GGUF header alone (no weights loaded): Anthropic's count_tokens.
  boost::asio::awaitable<uint32_t> count_prompt_tokens(GenerationRequest request);

  // Resolves a name to the installed model (http::StatusError 404 "model 'X' not found" with
  // `as_sent`).
  boost::asio::awaitable<registry::ModelShow> resolve(const registry::ModelName& name,
                                                      const std::string& as_sent);
  // The model's tokenizer, built from its GGUF header (no weights loaded); cached.
  boost::asio::awaitable<std::shared_ptr<const tokenizer::Tokenizer>> tokenizer_for(
      const registry::ModelShow& show);

  // The model's prompt builder and capabilities, computed once per manifest.
  boost::asio::awaitable<std::shared_ptr<const ModelFacts>> facts_for(
      const registry::ModelShow& show);

  sched::ModelManager& models() { return models_; }
  uint32_t queued() const { return queued_.load(); }

 private:
  // run()'s steps that await work elsewhere: the prompt rendered and tokenized on a worker, and
  // the compiled constraint on the output (null when there is none).
  boost::asio::awaitable<PromptTokens> build_prompt(const GenerationRequest& req,
                                                    const prompt::PromptBuilder& builder,
                                                    const tokenizer::Tokenizer& tok,
                                                    uint32_t num_ctx,
                                                    const vision::ImageLayout* images);
  boost::asio::awaitable<std::shared_ptr<const sampling::CompiledFormat>> output_constraint(
      const GenerationRequest& req, const nlohmann::ordered_json& tools,
      const prompt::ParserConfig& parser_config, sched::LoadedModel& model);

  struct Impl;
  registry::ModelStore& store_;
  sched::ModelManager& models_;
  boost::asio::thread_pool& workers_;
  ServiceOptions options_;
  std::atomic<uint32_t> queued_{0};
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkllm::requests
