#include "server/requests/generation.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "engine/sampling/token_constraint.h"
#include "registry/errors.h"
#include "server/async/run_blocking.h"
#include "server/http/status_error.h"
#include "server/requests/capability_check.h"
#include "server/requests/model_acquire.h"
#include "server/requests/prompt_facts.h"
#include "server/requests/prompt_tokens.h"
#include "server/requests/queue_slot.h"
#include "server/requests/reply_text.h"
#include "server/requests/request_options.h"
#include "server/scheduler/blob_model_source.h"

namespace vkllm::requests {

namespace {

using namespace std::chrono;
namespace asio = boost::asio;

}  // namespace

struct GenerationService::Impl {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const ModelFacts>> facts;  // by manifest digest
  std::map<std::string, std::shared_ptr<std::once_flag>> vocab_once;
  std::map<std::string, std::shared_ptr<const tokenizer::Tokenizer>> tokenizers;  // by blob
  asio::thread_pool loaders{8};  // acquires that may wait for a load
};

GenerationService::GenerationService(registry::ModelStore& store, sched::ModelManager& models,
                                     asio::thread_pool& workers, ServiceOptions options)
    : store_(store),
      models_(models),
      workers_(workers),
      options_(options),
      impl_(std::make_unique<Impl>()) {}

GenerationService::~GenerationService() {
  join_loaders();
}

void GenerationService::join_loaders() {
  impl_->loaders.join();
}

asio::awaitable<registry::ModelShow> GenerationService::resolve(const registry::ModelName& name,
                                                                const std::string& as_sent) {
  auto& store = store_;
  // GCC 12 destroys temporaries inside co_await expressions twice: every lambda handed to
  // run_blocking is a named local, moved in.
  auto find = [&store, name]() -> std::optional<registry::ModelShow> {
    try {
      return store.show(name);
    } catch (const registry::RegistryError& e) {
      if (e.kind() == registry::ErrorKind::not_found) return std::nullopt;
      throw;
    }
  };
  std::optional<registry::ModelShow> show = co_await async::run_blocking(workers_, std::move(find));
  if (!show) throw http::StatusError(404, "model '" + as_sent + "' not found");
  co_return std::move(*show);
}

asio::awaitable<std::shared_ptr<const tokenizer::Tokenizer>> GenerationService::tokenizer_for(
    const registry::ModelShow& show) {
  if (!show.model_blob) throw http::StatusError(400, "model has no weights layer");
  const std::string key = show.model_blob->str();
  {
    std::lock_guard lock(impl_->mutex);
    if (auto it = impl_->tokenizers.find(key); it != impl_->tokenizers.end()) co_return it->second;
  }
  auto& store = store_;
  const auto blob = *show.model_blob;
  auto build = [&store, blob]() -> std::shared_ptr<const tokenizer::Tokenizer> {
    try {
      return tokenizer::Tokenizer::from_gguf(sched::read_gguf_header(store.blobs(), blob));
    } catch (const std::exception& e) {
      throw http::StatusError(500, std::string("cannot read the model's vocabulary: ") + e.what());
    }
  };
  std::shared_ptr<const tokenizer::Tokenizer> tok =
      co_await async::run_blocking(workers_, std::move(build));
  std::lock_guard lock(impl_->mutex);
  impl_->tokenizers[key] = tok;
  co_return tok;
}

asio::awaitable<std::shared_ptr<const ModelFacts>> GenerationService::facts_for(
    const registry::ModelShow& show) {
  {
    std::lock_guard lock(impl_->mutex);
    if (auto it = impl_->facts.find(show.digest.str()); it != impl_->facts.end()) {
      co_return it->second;
    }
  }
  auto& store = store_;
  auto compute = [&store, show] { return compute_model_facts(store, show); };
  std::shared_ptr<const ModelFacts> facts =
      co_await async::run_blocking(workers_, std::move(compute));
  std::lock_guard lock(impl_->mutex);
  impl_->facts[show.digest.str()] = facts;
  co_return facts;
}

asio::awaitable<uint32_t> GenerationService::count_prompt_tokens(GenerationRequest req) {
  registry::ModelShow show = co_await resolve(req.name, req.model);
  const std::shared_ptr<const ModelFacts> facts = co_await facts_for(show);
  if (!facts->caps.generates()) {
    throw http::StatusError(400, "\"" + req.model + "\" does not support chat");
  }
  if (!facts->builder) throw http::StatusError(500, facts->builder_error);
  std::shared_ptr<const tokenizer::Tokenizer> tok = co_await tokenizer_for(show);
  resolve_think(req, *facts, req.chat.think);
  req.chat.truncate = false;
  // A template that fails to render throws prompt::TemplateError: a 500 (http/error_reply.h).
  auto count = [&req, &facts, &tok]() -> uint32_t {
    const auto rendered = facts->builder->render_chat(req.chat, UINT32_MAX, {});
    return static_cast<uint32_t>(tok->encode(rendered.text, true, true).size());
  };
  const uint32_t n = co_await async::run_blocking(workers_, std::move(count));
  co_return n;
}

namespace {

// The sequence options of a request's resolved options.
sched::SequenceOptions sequence_options(const RequestOptions& opts, const GenerationRequest& req,
                                        uint32_t num_ctx, bool shift) {
  sched::SequenceOptions so;
  so.sampling = opts.sampling;
  so.sampling.num_ctx = static_cast<int32_t>(num_ctx);
  so.num_predict = opts.num_predict;
  so.num_ctx = num_ctx;
  so.num_keep = opts.num_keep;
  so.shift = shift;
  so.logprobs = req.logprobs;
  so.top_logprobs = req.top_logprobs;
  so.draft_num_predict = opts.draft_num_predict;
  return so;
}

// A chunk that carries anything for the client (not the final one).
bool has_output(const GenerationChunk& c) {
  return !c.content.empty() || !c.thinking.empty() || !c.tool_calls.empty() || !c.logprobs.empty();
}

}  // namespace

asio::awaitable<void> GenerationService::run(GenerationRequest req, ChunkSink sink) {
  const auto t0 = steady_clock::now();
  const bool chat = req.kind == GenerationRequest::Kind::chat;
  registry::ModelShow show = co_await resolve(req.name, req.model);
  const std::shared_ptr<const ModelFacts> facts = co_await facts_for(show);
  check_capabilities(req, show, *facts);

  // An empty prompt (no messages) loads the model, or unloads it with keep_alive 0.
  const bool empty =
      chat ? req.chat.messages.empty() : req.generate.prompt.empty() && req.generate.suffix.empty();
  const bool load_only = empty && !req.debug_render_only;
  if (load_only && req.keep_alive && req.keep_alive->count() == 0) {
    models_.request_unload(show);
    GenerationChunk done;
    done.done = true;
    done.done_reason = "unload";
    co_await sink(done);
    co_return;
  }

  QueueSlot queue_slot(queued_, options_.max_queue);
  sched::ModelLease lease = co_await acquire_model(models_, impl_->loaders, show, req.keep_alive);
  const auto t_loaded = steady_clock::now();
  sched::LoadedModel& model = *lease;
  if (load_only) {
    GenerationChunk done;
    done.done = true;
    done.done_reason = "load";
    done.load_duration = duration_cast<nanoseconds>(t_loaded - t0);
    done.total_duration = duration_cast<nanoseconds>(steady_clock::now() - t0);
    co_await sink(done);
    co_return;
  }
  if (!facts->builder) throw http::StatusError(500, facts->builder_error);

  // Options: built-in defaults < named template's < model's parameters < request's.
  const RequestOptions opts =
      resolve_options({&facts->template_defaults, &show.parameters, &req.options});
  uint32_t num_ctx = model.default_num_ctx;
  if (opts.num_ctx) {
    num_ctx = static_cast<uint32_t>(
        std::clamp<int64_t>(*opts.num_ctx, 4, model.scheduler->max_context()));
  }
  const bool shift = req.shift.value_or(true);

  const tokenizer::Tokenizer& tok = *model.tokenizer;
  check_context_tokens(req, tok);
  PromptTokens prompt = co_await build_prompt(req, *facts->builder, tok, num_ctx,
                                              model.images ? &model.images->layout() : nullptr);
  if (req.debug_render_only) {
    GenerationChunk done;
    done.done = true;
    done.rendered_template = prompt.rendered.text;
    done.image_count = prompt.rendered.images.size();
    co_await sink(done);
    co_return;
  }
  std::vector<int32_t>& tokens = prompt.tokens;
  if (!prompt.images.empty() && tokens.size() >= num_ctx) {
    // Cutting the prompt would cut through an image's rows or leave them behind.
    throw http::StatusError(400, "the prompt with its images is " + std::to_string(tokens.size()) +
                                     " tokens, more than the context length " +
                                     std::to_string(num_ctx) +
                                     "; send fewer images or a larger num_ctx");
  }
  fit_prompt(tokens, {.num_ctx = num_ctx,
                      .num_keep = opts.num_keep,
                      .add_bos = tok.add_bos(),
                      .truncate = chat ? req.chat.truncate : req.generate.truncate,
                      .shift = shift});

  sched::SequenceOptions so = sequence_options(opts, req, num_ctx, shift);
  const nlohmann::ordered_json tools = has_tools(req) ? req.chat.tools : nlohmann::ordered_json();
  const prompt::Think& think = chat ? req.chat.think : req.generate.think;
  prompt::ParserConfig parser_config =
      output_parser_config(*facts->builder, req, tools, think, prompt.rendered.text);
  so.format = co_await output_constraint(req, tools, parser_config, model);
  ReplyText reply(tok, std::move(parser_config), opts.stop, req.tool_choice.parallel);

  auto stream = std::make_shared<sched::TokenStream>(co_await asio::this_coro::executor);
  // A cancellation (the client left) aborts the wait on the stream; the handle's destructor then
  // drops the sequence.
  sched::SequenceHandle handle =
      model.scheduler->submit({tokens, so, stream, std::move(prompt.images)});

  // The token stream into chunks: one per token that shows text, as Ollama streams, however
  // many tokens arrive together (a fast backend hands over several per wake-up).
  uint32_t prompt_count = static_cast<uint32_t>(tokens.size());
  uint32_t cached_count = 0;
  nanoseconds prompt_eval{0};
  steady_clock::time_point t_first{};
  std::vector<int32_t> output_tokens;
  std::string done_reason;
  for (bool finished = false; !finished;) {
    std::vector<sched::TokenEvent> events = co_await stream->next();
    GenerationChunk chunk;
    for (auto& ev : events) {
      if (ev.prompt_tokens > 0 && t_first == steady_clock::time_point{}) {
        t_first = steady_clock::now();
        cached_count = ev.cached_tokens;
        prompt_eval = ev.prompt_eval;
        queue_slot.release();  // the sequence started
      }
      for (size_t i = 0; i < ev.tokens.size() && done_reason.empty(); ++i) {
        const int32_t t = ev.tokens[i];
        output_tokens.push_back(t);
        if (i < ev.logprobs.size()) chunk.logprobs.push_back(logprob_text(tok, t, ev.logprobs[i]));
        if (reply.feed(t, chunk)) {
          done_reason = "stop";
          handle.cancel();
        } else if (has_output(chunk)) {
          co_await sink(chunk);
          chunk = GenerationChunk{};
        }
      }
      if (ev.finish == sched::FinishReason::error) throw http::StatusError(500, ev.error);
      if (ev.finish == sched::FinishReason::unavailable) throw http::StatusError(503, ev.error);
      if (ev.finish != sched::FinishReason::none) {
        finished = true;
        if (done_reason.empty()) {
          done_reason = ev.finish == sched::FinishReason::length ? "length" : "stop";
        }
        if (ev.prompt_tokens) {
          prompt_count = ev.prompt_tokens;
          cached_count = ev.cached_tokens;
        }
        break;
      }
    }
    if (!done_reason.empty()) finished = true;
    if (finished) reply.finish(chunk);
    if (has_output(chunk)) co_await sink(chunk);
  }
  handle.release();

  const auto t_end = steady_clock::now();
  GenerationChunk done;
  done.done = true;
  done.done_reason = done_reason;
  done.total_duration = duration_cast<nanoseconds>(t_end - t0);
  done.load_duration = duration_cast<nanoseconds>(t_loaded - t0);
  // Ollama counts the prompt tokens it evaluated: applications read a drop as a cache hit.
  cached_count = std::min(cached_count, prompt_count);
  done.prompt_eval_count = prompt_count - cached_count;
  done.prompt_cached_count = cached_count;
  done.stop_sequence = reply.stop_sequence();
  done.prompt_eval_duration = prompt_eval;
  done.eval_count = static_cast<uint32_t>(output_tokens.size());
  if (t_first != steady_clock::time_point{}) {
    done.eval_duration = duration_cast<nanoseconds>(t_end - t_first);
  }
  if (!chat && !req.raw) {
    // An image's rows have no token ids to give back (Ollama's context holds none either).
    for (const int32_t t : tokens)
      if (t >= 0) done.context.push_back(t);
    done.context.insert(done.context.end(), output_tokens.begin(), output_tokens.end());
  }
  co_await sink(done);
}

asio::awaitable<PromptTokens> GenerationService::build_prompt(const GenerationRequest& req,
                                                              const prompt::PromptBuilder& builder,
                                                              const tokenizer::Tokenizer& tok,
                                                              uint32_t num_ctx,
                                                              const vision::ImageLayout* images) {
  const auto deadline = steady_clock::now() + options_.prompt_budget;
  const auto budget_ms = options_.prompt_budget.count();
  // Off the I/O thread: tokenizing long prompts and truncating them take time. Between the renders
  // of truncation it stops when the request is cancelled or the budget is spent.
  auto build = [&req, &builder, &tok, num_ctx, deadline, budget_ms, images](std::stop_token stop) {
    auto check = [&stop, deadline, budget_ms] {
      if (stop.stop_requested()) throw http::StatusError(499, "request cancelled");
      if (steady_clock::now() > deadline) {
        throw http::StatusError(400, "building the prompt took longer than " +
                                         std::to_string(budget_ms) +
                                         " ms; send fewer or shorter messages");
      }
    };
    return build_prompt_tokens(req, builder, tok, num_ctx, check, images);
  };
  co_return co_await async::run_blocking(workers_, std::move(build));
}

asio::awaitable<std::shared_ptr<const sampling::CompiledFormat>>
GenerationService::output_constraint(const GenerationRequest& req,
                                     const nlohmann::ordered_json& tools,
                                     const prompt::ParserConfig& parser_config,
                                     sched::LoadedModel& model) {
  // What the output must match: forced tool calls (in the model's call syntax), else a
  // grammar/regex/choice, else `format`.
  std::optional<sampling::FormatSpec> spec;
  if (req.kind == GenerationRequest::Kind::chat)
    spec = forced_tool_calls(tools, req.tool_choice, parser_config, model.tokenizer.get());
  if (!spec && req.constraint) spec = *req.constraint;
  const bool json_format = !req.format.is_null() && !(req.format.is_string() && req.format == "");
  if (!spec && json_format) spec = sampling::FormatSpec::of_json(req.format);
  if (!spec) co_return nullptr;
  // Compiling may take a good part of a second (the compiler's work budget): never on an I/O
  // thread. Repeated specs come from the compile cache. (A format the compiler refuses throws
  // sampling::FormatError: a 400.)
  auto compile = [spec = std::move(*spec)] { return sampling::compile_format_spec(spec); };
  std::shared_ptr<const sampling::CompiledFormat> format =
      co_await async::run_blocking(workers_, std::move(compile));
  if (!model.scheduler->vocabulary_index()) {  // built once per loaded model
    std::shared_ptr<std::once_flag> once;
    {
      std::lock_guard lock(impl_->mutex);
      auto& slot = impl_->vocab_once[model.key + std::to_string(uintptr_t(&model))];
      if (!slot) slot = std::make_shared<std::once_flag>();
      once = slot;
    }
    auto index = [once, &model] {
      std::call_once(*once, [&] {
        model.scheduler->set_vocabulary_index(sampling::build_vocabulary_index(*model.tokenizer));
      });
    };
    co_await async::run_blocking(workers_, std::move(index));
  }
  co_return format;
}

}  // namespace vkllm::requests
