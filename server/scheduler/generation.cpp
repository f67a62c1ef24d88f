#include "server/scheduler/generation.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "engine/sampling/token_constraint.h"
#include "engine/tokenizer/incremental_decoder.h"
#include "registry/errors.h"
#include "server/async/run_blocking.h"
#include "server/http/status_error.h"
#include "server/prompt/output_parser.h"
#include "server/scheduler/blob_model_source.h"
#include "server/scheduler/prompt_facts.h"
#include "server/scheduler/request_options.h"
#include "server/scheduler/stop_matcher.h"

namespace vkllm::sched {

namespace {

using namespace std::chrono;
namespace asio = boost::asio;

// Drops RAII-style on scope exit.
struct Finally {
  std::function<void()> fn;
  ~Finally() {
    if (fn) fn();
  }
};

}  // namespace

struct GenerationService::Impl {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const ModelFacts>> facts;  // by manifest digest
  std::map<std::string, std::shared_ptr<std::once_flag>> vocab_once;
  std::map<std::string, std::shared_ptr<const tokenizer::Tokenizer>> tokenizers;  // by blob
  asio::thread_pool loaders{8};  // acquires that may wait for a load
};

GenerationService::GenerationService(registry::ModelStore& store, ModelManager& models,
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
      return tokenizer::Tokenizer::from_gguf(read_gguf_header(store.blobs(), blob));
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

namespace {

bool has_output(const GenerationChunk& c) {
  return !c.content.empty() || !c.thinking.empty() || !c.tool_calls.empty() || !c.logprobs.empty();
}

}  // namespace

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

asio::awaitable<void> GenerationService::run(GenerationRequest req, ChunkSink sink,
                                             std::shared_ptr<CancelSignal> cancel) {
  const auto t0 = steady_clock::now();
  const bool chat = req.kind == GenerationRequest::Kind::chat;
  registry::ModelShow show = co_await resolve(req.name, req.model);
  const std::shared_ptr<const ModelFacts> facts = co_await facts_for(show);

  // Capabilities (compat §1.5, §1.6, §1.15), as /api/show lists them.
  if (!facts->caps.generates()) {
    throw http::StatusError(
        400, "\"" + req.model + "\" does not support " + std::string(chat ? "chat" : "generate"));
  }
  prompt::Think& think = chat ? req.chat.think : req.generate.think;
  resolve_think(req, *facts, think);
  const bool has_tools = chat && req.chat.tools.is_array() && !req.chat.tools.empty();
  if (has_tools && !facts->caps.has("tools")) {
    throw http::StatusError(400, show.name.full() + " does not support tools");
  }
  if (!chat && !req.generate.suffix.empty() && !facts->caps.has("insert") && !req.raw) {
    throw http::StatusError(400, show.name.full() + " does not support insert");
  }
  bool has_images = !req.generate.images.empty();
  for (const auto& m : req.chat.messages) has_images |= !m.images.empty();
  if (has_images && !facts->caps.has("vision")) {
    const auto& not_run = facts->caps.not_run;
    const bool tower = std::find(not_run.begin(), not_run.end(), "vision") != not_run.end();
    throw http::StatusError(
        400, "\"" + req.model + "\" does not support images" +
                 (tower ? std::string(": vkllm does not run vision encoders yet") : std::string()));
  }

  // Load only / unload (empty prompt or no messages).
  const bool empty =
      chat ? req.chat.messages.empty() : req.generate.prompt.empty() && req.generate.suffix.empty();
  if (empty && !req.debug_render_only) {
    GenerationChunk done;
    done.done = true;
    if (req.keep_alive && req.keep_alive->count() == 0) {
      models_.request_unload(show);
      done.done_reason = "unload";
      co_await sink(done);
      co_return;
    }
  }

  // Queue accounting (OLLAMA_MAX_QUEUE): a request waits until its sequence starts.
  if (queued_.load() >= options_.max_queue) {
    throw http::StatusError(503,
                            "server busy, please try again.  maximum pending requests exceeded");
  }
  ++queued_;
  bool queued = true;
  auto dequeue = [&] {
    if (queued) {
      --queued_;
      queued = false;
    }
  };
  Finally queue_guard{dequeue};

  std::optional<ModelLease> lease = models_.try_acquire(show, req.keep_alive);
  if (!lease) {
    auto& models = models_;
    auto keep = req.keep_alive;
    auto load = [&models, show, keep] { return models.acquire(show, keep); };
    lease.emplace(co_await async::run_blocking(impl_->loaders, std::move(load)));
  }
  const auto t_loaded = steady_clock::now();
  if (cancel->cancelled) co_return;
  LoadedModel& model = **lease;

  if (empty && !req.debug_render_only) {
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
  const uint32_t max_ctx = model.scheduler->max_context();
  uint32_t num_ctx = model.default_num_ctx;
  if (opts.num_ctx) num_ctx = static_cast<uint32_t>(std::clamp<int64_t>(*opts.num_ctx, 4, max_ctx));
  const bool shift = req.shift.value_or(true);

  // Prompt and tokens, off the I/O thread (tokenizing long prompts and truncation take time).
  const tokenizer::Tokenizer& tok = *model.tokenizer;
  for (const int32_t id : req.context) {  // as /api/detokenize checks them
    if (id < 0 || id >= tok.vocab_size()) {
      throw http::StatusError(400, "token id " + std::to_string(id) +
                                       " in context is outside the vocabulary of " +
                                       std::to_string(tok.vocab_size()));
    }
  }
  struct Built {
    prompt::Rendered rendered;
    std::vector<int32_t> tokens;
  };
  auto builder = facts->builder;
  const auto prompt_deadline = steady_clock::now() + options_.prompt_budget;
  const auto budget_ms = options_.prompt_budget.count();
  // Between the renders of truncation: stop when the client left or the budget is spent.
  auto check_prompt_work = [cancel, prompt_deadline, budget_ms] {
    if (cancel->cancelled) throw http::StatusError(499, "request cancelled");
    if (steady_clock::now() > prompt_deadline) {
      throw http::StatusError(400, "building the prompt took longer than " +
                                       std::to_string(budget_ms) +
                                       " ms; send fewer or shorter messages");
    }
  };
  auto build_prompt = [&, builder, num_ctx]() -> Built {
    Built b;
    auto count = [&tok, &check_prompt_work](std::string_view text) {
      check_prompt_work();
      const size_t n = tok.encode(text, true, true).size();
      check_prompt_work();
      return n;
    };
    if (chat) {  // (a template that fails throws prompt::TemplateError: a 500)
      b.rendered = builder->render_chat(req.chat, num_ctx, count);
    } else if (req.raw) {
      b.rendered.text = req.generate.prompt;
      b.rendered.images = req.generate.images;
    } else {
      b.rendered = builder->render_generate(req.generate, num_ctx, count);
    }
    check_prompt_work();
    if (!req.debug_render_only) {
      std::string text = b.rendered.text;
      if (!req.context.empty()) text = tok.decode(req.context) + text;
      b.tokens = tok.encode(text, true, true);
    }
    return b;
  };
  Built built = co_await async::run_blocking(workers_, std::move(build_prompt));
  if (cancel->cancelled) co_return;
  if (req.debug_render_only) {
    GenerationChunk done;
    done.done = true;
    done.rendered_template = built.rendered.text;
    done.image_count = built.rendered.images.size();
    co_await sink(done);
    co_return;
  }
  std::vector<int32_t>& tokens = built.tokens;
  if (tokens.empty()) tokens.push_back(tok.bos() >= 0 ? tok.bos() : 0);
  if (tokens.size() > num_ctx - 1) {
    if (!(chat ? req.chat.truncate : req.generate.truncate)) {
      // truncate:false: Ollama (v0.30+) passes on its llama-server's refusal as the message.
      nlohmann::ordered_json e;
      e["code"] = 400;
      e["message"] = "request (" + std::to_string(tokens.size()) +
                     " tokens) exceeds the available context size (" + std::to_string(num_ctx) +
                     " tokens), try increasing it";
      e["type"] = "exceed_context_size_error";
      e["n_prompt_tokens"] = tokens.size();
      e["n_ctx"] = num_ctx;
      throw http::StatusError(400, nlohmann::ordered_json{{"error", e}}.dump());
    }
    if (!shift) {
      throw http::StatusError(
          400,
          "the prompt is longer than the context length currently available to "
          "the model; shorten the prompt, adjust the context length in settings, "
          "or use a model with a longer context length");
    }
    // Keep num_keep tokens (+BOS) and the newest ones, freeing half the rest for generation.
    uint32_t keep = opts.num_keep < 0 ? num_ctx - 1 : uint32_t(opts.num_keep);
    if (tok.add_bos() && opts.num_keep >= 0) ++keep;
    keep = std::min(keep, num_ctx - 1);
    const uint32_t target = num_ctx - std::max<uint32_t>((num_ctx - keep) / 2, 1);
    std::vector<int32_t> cut(tokens.begin(), tokens.begin() + std::min<size_t>(keep, target));
    cut.insert(cut.end(), tokens.end() - (target - cut.size()), tokens.end());
    tokens = std::move(cut);
  }

  SequenceOptions so;
  so.sampling = opts.sampling;
  so.sampling.num_ctx = static_cast<int32_t>(num_ctx);
  so.num_predict = opts.num_predict;
  so.num_ctx = num_ctx;
  so.num_keep = opts.num_keep;
  so.shift = shift;
  so.logprobs = req.logprobs;
  so.top_logprobs = req.top_logprobs;
  so.draft_num_predict = opts.draft_num_predict;
  const nlohmann::ordered_json tools = has_tools ? req.chat.tools : nlohmann::ordered_json();
  prompt::ParserConfig parser_config =
      output_parser_config(*builder, req, tools, think, built.rendered.text);
  // What the output must match: forced tool calls, else a grammar/regex/choice, else `format`.
  std::optional<sampling::FormatSpec> spec;
  // (Harmony writes its calls in its own message syntax, which the tool-call grammar does not
  // know: tool_choice is not enforced there.)
  if (chat && !parser_config.harmony)
    spec = forced_tool_calls(tools, req.tool_choice, parser_config);
  if (!spec && req.constraint) spec = *req.constraint;
  const bool json_format = !req.format.is_null() && !(req.format.is_string() && req.format == "");
  if (!spec && json_format) spec = sampling::FormatSpec::of_json(req.format);
  if (spec) {
    // Compiling may take a good part of a second (the compiler's work budget): never on an I/O
    // thread. Repeated specs come from the compile cache.
    // (A format the compiler refuses throws sampling::FormatError: a 400.)
    auto compile = [spec = std::move(*spec)] { return sampling::compile_format_spec(spec); };
    so.format = co_await async::run_blocking(workers_, std::move(compile));
    if (!model.scheduler->vocabulary_index()) {
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
  }

  // Harmony's parser reads control tokens (<|channel|>, <|message|>...) as text.
  tokenizer::IncrementalDecoder decoder(tok, false, parser_config.special_tokens);
  prompt::OutputParser parser(std::move(parser_config));
  StopMatcher stops(opts.stop);

  auto stream = std::make_shared<TokenStream>(co_await asio::this_coro::executor);
  SequenceRequest sr{tokens, so, stream};
  SequenceHandle handle = model.scheduler->submit(std::move(sr));
  cancel->on_cancel = [&handle, stream] {
    handle.cancel();
    stream->nudge();
  };
  Finally clear_cancel{[&] { cancel->on_cancel = nullptr; }};
  if (cancel->cancelled) co_return;

  uint32_t prompt_count = static_cast<uint32_t>(tokens.size());
  uint32_t cached_count = 0;
  std::string stop_sequence;
  nanoseconds prompt_eval{0};
  steady_clock::time_point t_first{};
  uint32_t generated = 0;
  std::vector<int32_t> output_tokens;
  std::string last_piece;
  int repeats = 0;
  std::string done_reason;
  size_t calls_seen = 0;  // tool calls handed out so far
  for (;;) {
    std::vector<TokenEvent> events = co_await stream->next();
    if (cancel->cancelled) co_return;
    GenerationChunk chunk;
    bool finished = false;
    for (auto& ev : events) {
      if (ev.prompt_tokens > 0 && t_first == steady_clock::time_point{}) {
        t_first = steady_clock::now();
        cached_count = ev.cached_tokens;
        prompt_eval = ev.prompt_eval;
        dequeue();
      }
      for (size_t i = 0; i < ev.tokens.size() && done_reason.empty(); ++i) {
        const int32_t t = ev.tokens[i];
        ++generated;
        output_tokens.push_back(t);
        if (i < ev.logprobs.size()) {
          TokenLogprobText lp;
          lp.token = tok.token_to_piece(t, true);
          lp.logprob = ev.logprobs[i].logprob;
          for (const auto& top : ev.logprobs[i].top) {
            lp.top.emplace_back(tok.token_to_piece(top.token, true), top.logprob);
          }
          chunk.logprobs.push_back(std::move(lp));
        }
        // Runaway protection, as Ollama: the same token text over 30 times in a row.
        std::string piece = tok.token_to_piece(t);
        piece.erase(0, piece.find_first_not_of(" \t\n\r"));
        piece.erase(piece.find_last_not_of(" \t\n\r") + 1);
        repeats = !piece.empty() && piece == last_piece ? repeats + 1 : 0;
        last_piece = piece;
        auto r = stops.feed(decoder.push(t));
        auto d = parser.feed(r.text);
        if (!d.error.empty()) throw http::StatusError(500, d.error);
        chunk.content += d.content;
        chunk.thinking += d.thinking;
        for (auto& c : d.tool_calls) chunk.tool_calls.push_back(std::move(c));
        calls_seen += d.tool_calls.size();
        const bool one_call_done = !req.tool_choice.parallel && calls_seen > 0;
        if (one_call_done) {
          // parallel_tool_calls false: the first call is the answer.
          chunk.tool_calls.resize(chunk.tool_calls.size() - (calls_seen - 1));
          calls_seen = 1;
        }
        if (r.stopped) stop_sequence = r.matched;
        if (r.stopped || repeats >= 30 || one_call_done) {
          done_reason = "stop";
          handle.cancel();
        }
        // One chunk per token that shows text, as Ollama streams, however many tokens arrived
        // together (a fast backend hands over several per wake-up).
        if (done_reason.empty() && has_output(chunk)) {
          co_await sink(chunk);
          if (cancel->cancelled) co_return;
          chunk = GenerationChunk{};
        }
      }
      if (ev.finish == FinishReason::error) throw http::StatusError(500, ev.error);
      if (ev.finish == FinishReason::unavailable) throw http::StatusError(503, ev.error);
      if (ev.finish != FinishReason::none) {
        finished = true;
        if (done_reason.empty()) {
          done_reason = ev.finish == FinishReason::length ? "length" : "stop";
        }
        if (ev.prompt_tokens) {
          prompt_count = ev.prompt_tokens;
          cached_count = ev.cached_tokens;
        }
        break;
      }
    }
    if (!done_reason.empty()) finished = true;
    if (finished) {
      auto r = stops.feed(decoder.finish());
      std::string rest = r.text + (r.stopped ? std::string() : stops.flush());
      auto d = parser.feed(rest);
      auto tail = parser.finish();
      if (!d.error.empty()) throw http::StatusError(500, d.error);
      if (!tail.error.empty()) throw http::StatusError(500, tail.error);
      chunk.content += d.content + tail.content;
      chunk.thinking += d.thinking + tail.thinking;
      for (auto* calls : {&d.tool_calls, &tail.tool_calls}) {
        for (auto& c : *calls) {
          if (req.tool_choice.parallel || calls_seen == 0) chunk.tool_calls.push_back(std::move(c));
          ++calls_seen;
        }
      }
    }
    if (has_output(chunk)) {
      co_await sink(chunk);
      if (cancel->cancelled) co_return;
    }
    if (finished) break;
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
  done.stop_sequence = stop_sequence;
  done.prompt_eval_duration = prompt_eval;
  done.eval_count = generated;
  if (t_first != steady_clock::time_point{}) {
    done.eval_duration = duration_cast<nanoseconds>(t_end - t_first);
  }
  if (!chat && !req.raw) {
    done.context = tokens;
    done.context.insert(done.context.end(), output_tokens.begin(), output_tokens.end());
  }
  co_await sink(done);
}

}  // namespace vkllm::sched
