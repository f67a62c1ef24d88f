#include "server/api/openai_routes.h"

#include <chrono>
#include <memory>

#include "server/api/cancel_on_disconnect.h"
#include "server/api/inference_response.h"
#include "server/api/openai_request.h"
#include "server/api/openai_response.h"
#include "server/api/openai_responses.h"
#include "server/async/run_blocking.h"
#include "server/http/exchange.h"
#include "server/scheduler/request_error.h"

namespace vkllm::api {

namespace {

using async::run_blocking;
using boost::asio::awaitable;
using http::Exchange;
using http::HttpError;
using J = nlohmann::ordered_json;

std::string text_of(const J& j) {
  return j.dump(-1, ' ', false, J::error_handler_t::replace);
}

// The SSE side of one response: the stream starts with the first write; `finished` tells a
// failure whether it can still be reported in the stream, and `error_text` how (chat and
// completions send a data-only envelope, responses a named `error` event).
struct SseWriter {
  Exchange& ex;
  bool finished = false;
  std::function<std::string(unsigned, std::string_view)> error_text = openai_sse_error;

  awaitable<void> write(const std::string& text) {
    if (!ex.response_started()) {
      ex.add_header("Cache-Control", "no-cache");
      co_await ex.start_chunked(200, "text/event-stream");
    }
    co_await ex.write_chunk(text);
  }
  awaitable<void> end() {
    finished = true;
    co_await ex.finish_chunked();
  }
};

using RouteBody = awaitable<void> (*)(OpenAiApi&, Exchange&, SseWriter&);

// Runs a route and answers any failure in OpenAI's envelope: with its status before the
// response started, as a final SSE event (and the end of the stream) after.
awaitable<void> guarded(OpenAiApi& api, Exchange& ex, RouteBody body) {
  SseWriter sse{ex};
  unsigned status = 500;
  std::string message;
  bool failed = false;
  try {
    auto task = body(api, ex, sse);
    co_await std::move(task);
  } catch (const HttpError& e) {
    failed = true;
    status = e.status();
    message = e.what();
  } catch (const sched::RequestError& e) {
    failed = true;
    status = e.status();
    message = e.what();
  } catch (const std::exception& e) {
    failed = true;
    message = e.what();
  }
  if (!failed) co_return;
  if (!ex.response_started()) {
    co_await ex.respond(status, http::kJsonContentType,
                        text_of(openai_error_json(status, message)));
  } else if (!sse.finished) {
    co_await ex.write_chunk(sse.error_text(status, message));
    co_await sse.end();
  }
}

awaitable<void> respond_json(Exchange& ex, const J& j) {
  co_await ex.respond(200, http::kJsonContentType, text_of(j));
}

// Chat and legacy completions: one generation, streamed as Events' SSE text or answered as one
// JSON body made from the accumulated chunks.
template <class Events, class Body>
awaitable<void> run_completion(OpenAiApi& api, Exchange& ex, SseWriter& sse, OpenAiRequest& req,
                               std::string_view id_prefix, Body body_json) {
  auto cancel = cancel_on_disconnect(ex);
  const OpenAiMeta meta = openai_meta(id_prefix, req.request.model);
  const bool stream = req.stream;
  Events events(meta, req.include_usage);
  sched::GenerationChunk total;
  sched::ChunkSink sink = [&](sched::GenerationChunk& c) -> awaitable<void> {
    if (!stream) {
      accumulate(total, std::move(c));
      co_return;
    }
    const std::string text = events.next(c);
    if (!text.empty()) co_await sse.write(text);
    if (c.done) co_await sse.end();
  };
  // Arguments built outside the co_await expression (GCC 12 coroutine temporaries).
  auto task = api.service.run(std::move(req.request), sink, cancel);
  co_await std::move(task);
  if (cancel->cancelled || stream) co_return;
  const J out = body_json(meta, total);
  co_await respond_json(ex, out);
}

awaitable<void> chat_completions(OpenAiApi& api, Exchange& ex, SseWriter& sse) {
  const std::string body = co_await ex.read_body();
  OpenAiRequest req = parse_chat_completion_request(parse_openai_body(body));
  auto task =
      run_completion<ChatCompletionEvents>(api, ex, sse, req, "chatcmpl-", chat_completion_json);
  co_await std::move(task);
}

awaitable<void> completions(OpenAiApi& api, Exchange& ex, SseWriter& sse) {
  const std::string body = co_await ex.read_body();
  OpenAiRequest req = parse_completion_request(parse_openai_body(body));
  auto task = run_completion<CompletionEvents>(api, ex, sse, req, "cmpl-", completion_json);
  co_await std::move(task);
}

awaitable<void> responses(OpenAiApi& api, Exchange& ex, SseWriter& sse) {
  const std::string body = co_await ex.read_body();
  OpenAiRequest req = parse_responses_request(parse_openai_body(body));
  auto cancel = cancel_on_disconnect(ex);
  auto rs = std::make_shared<ResponsesStream>(openai_meta("resp_", req.request.model), req.echo);
  // The failure path outlives this frame: it holds its own reference to the stream state.
  sse.error_text = [rs](unsigned status, std::string_view message) {
    return rs->error(status, message).sse();
  };
  const bool stream = req.stream;
  bool started = false;
  sched::ChunkSink sink = [&](sched::GenerationChunk& c) -> awaitable<void> {
    std::string text;
    if (stream && !started) {
      started = true;
      for (const auto& e : rs->start()) text += e.sse();
    }
    for (const auto& e : rs->feed(c)) text += e.sse();
    if (c.done) {
      for (const auto& e : rs->finish(c)) text += e.sse();
    }
    if (!stream) co_return;
    if (!text.empty()) co_await sse.write(text);
    if (c.done) co_await sse.end();
  };
  auto task = api.service.run(std::move(req.request), sink, cancel);
  co_await std::move(task);
  if (cancel->cancelled || stream) co_return;
  const J out = rs->response();
  co_await respond_json(ex, out);
}

J model_json(const std::string& id, const registry::ModelName& name,
             registry::Clock::time_point modified) {
  J m;
  m["id"] = id;
  m["object"] = "model";
  m["created"] =
      std::chrono::duration_cast<std::chrono::seconds>(modified.time_since_epoch()).count();
  m["owned_by"] = name.ns;  // "library" for official models, the user or org otherwise
  return m;
}

awaitable<void> list_models(OpenAiApi& api, Exchange& ex, SseWriter&) {
  auto work = [&api] { return api.store.list(); };
  auto task = run_blocking(api.workers, std::move(work));
  const std::vector<registry::ModelSummary> models = co_await std::move(task);
  J data = J::array();
  for (const auto& s : models) data.push_back(model_json(s.name.display(), s.name, s.modified_at));
  const J out{{"object", "list"}, {"data", std::move(data)}};
  co_await respond_json(ex, out);
}

awaitable<void> retrieve_model(OpenAiApi& api, Exchange& ex, SseWriter&) {
  const std::string id = ex.param("model");
  const auto name = registry::ModelName::try_parse(id);
  if (id.empty() || !name) throw HttpError(404, "model '" + id + "' not found");
  // Captures by reference only: GCC 12 miscompiles by-value captures that reach a coroutine.
  const registry::ModelName& n = *name;
  auto work = [&api, &n] { return api.store.find(n); };
  auto task = run_blocking(api.workers, std::move(work));
  const std::optional<registry::ModelRecord> found = co_await std::move(task);
  if (!found) throw HttpError(404, "model '" + name->display() + "' not found");
  const J out = model_json(id, found->name, found->modified_at);
  co_await respond_json(ex, out);
}

}  // namespace

void add_openai_routes(http::Router& router, OpenAiApi& api) {
  auto add = [&](http::Method method, std::string_view pattern, RouteBody body) {
    router.add(method, pattern, [&api, body](Exchange& ex) { return guarded(api, ex, body); });
  };
  add(http::Method::post, "/v1/chat/completions", chat_completions);
  add(http::Method::post, "/v1/completions", completions);
  add(http::Method::post, "/v1/responses", responses);
  add(http::Method::get, "/v1/models", list_models);
  add(http::Method::get, "/v1/models/*model", retrieve_model);
}

}  // namespace vkllm::api
