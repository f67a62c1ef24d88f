#include "server/api/openai_routes.h"

#include <chrono>
#include <memory>

#include "server/api/inference_response.h"
#include "server/api/openai_request.h"
#include "server/api/openai_response.h"
#include "server/api/openai_responses.h"
#include "server/api/sse_route.h"
#include "server/async/run_blocking.h"
#include "server/http/exchange.h"
#include "server/http/json_text.h"
#include "server/http/until_disconnect.h"

namespace vkllm::api {

namespace {

using async::run_blocking;
using boost::asio::awaitable;
using http::Exchange;
using http::StatusError;
using J = nlohmann::ordered_json;

using RouteBody = SseRouteBody<OpenAiApi>;

awaitable<void> respond_json(Exchange& ex, const J& j) {
  co_await ex.respond(200, http::kJsonContentType, http::json_text(j));
}

// Chat and legacy completions: one generation, streamed as Events' SSE text or answered as one
// JSON body made from the accumulated chunks.
template <class Events, class Body>
awaitable<void> run_completion(OpenAiApi& api, Exchange& ex, SseWriter& sse, OpenAiRequest& req,
                               std::string_view id_prefix, Body body_json) {
  const OpenAiMeta meta = openai_meta(id_prefix, req.request.model);
  Events events(meta, req.include_usage);
  requests::GenerationChunk total;
  auto task = generate_sse_or_whole(api.service, ex, sse, std::move(req.request), req.stream,
                                    events, total);
  const bool answer = co_await std::move(task);
  if (!answer) co_return;
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
  auto rs = std::make_shared<ResponsesStream>(openai_meta("resp_", req.request.model), req.echo);
  // The failure path outlives this frame: it holds its own reference to the stream state.
  sse.error_event = [rs](const http::StatusError& e) { return rs->error(e).sse(); };
  const bool stream = req.stream;
  bool started = false;
  requests::ChunkSink sink = [&](requests::GenerationChunk& c) -> awaitable<void> {
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
  auto task = api.service.run(std::move(req.request), sink);
  auto guarded = http::until_disconnect(ex, std::move(task));
  if (!co_await std::move(guarded) || stream) co_return;
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
  if (id.empty() || !name) throw StatusError(404, "model '" + id + "' not found");
  // Captures by reference only: GCC 12 miscompiles by-value captures that reach a coroutine.
  const registry::ModelName& n = *name;
  auto work = [&api, &n] { return api.store.find(n); };
  auto task = run_blocking(api.workers, std::move(work));
  const std::optional<registry::ModelRecord> found = co_await std::move(task);
  if (!found) throw StatusError(404, "model '" + name->display() + "' not found");
  const J out = model_json(id, found->name, found->modified_at);
  co_await respond_json(ex, out);
}

}  // namespace

void add_openai_routes(http::Router& router, OpenAiApi& api) {
  auto add = [&](http::Method method, std::string_view pattern, RouteBody body) {
    router.add(method, pattern, [&api, body](Exchange& ex) {
      return guarded_sse_route(api, ex, body, http::ErrorShape::openai);
    });
  };
  add(http::Method::post, "/v1/chat/completions", chat_completions);
  add(http::Method::post, "/v1/completions", completions);
  add(http::Method::post, "/v1/responses", responses);
  add(http::Method::get, "/v1/models", list_models);
  add(http::Method::get, "/v1/models/*model", retrieve_model);
}

}  // namespace vkllm::api
