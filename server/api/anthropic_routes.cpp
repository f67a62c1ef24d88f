#include "server/api/anthropic_routes.h"

#include "server/api/anthropic_request.h"
#include "server/api/anthropic_response.h"
#include "server/api/openai_request.h"
#include "server/api/sse_route.h"
#include "server/http/exchange.h"
#include "server/http/json_text.h"

namespace vkllm::api {

namespace {

using boost::asio::awaitable;
using http::Exchange;
using J = nlohmann::ordered_json;

// One generation, streamed as Anthropic's events or answered as one message made from the
// accumulated chunks.
awaitable<void> messages(AnthropicApi& api, Exchange& ex, SseWriter& sse) {
  const std::string body = co_await ex.read_body();
  AnthropicRequest req = parse_messages_request(parse_openai_body(body));
  const AnthropicMeta meta = anthropic_meta(req.request.model, req.stop_sequences);
  AnthropicEvents events(meta);
  requests::GenerationChunk total;
  auto task = generate_sse_or_whole(api.service, ex, sse, std::move(req.request), req.stream,
                                    events, total);
  const bool answer = co_await std::move(task);
  if (!answer) co_return;
  const J out = anthropic_message_json(meta, total);
  co_await ex.respond(200, http::kJsonContentType, http::json_text(out));
}

awaitable<void> count_tokens(AnthropicApi& api, Exchange& ex, SseWriter&) {
  const std::string body = co_await ex.read_body();
  AnthropicRequest req = parse_count_tokens_request(parse_openai_body(body));
  auto task = api.service.count_prompt_tokens(std::move(req.request));
  const uint32_t n = co_await std::move(task);
  J out;
  out["input_tokens"] = n;
  co_await ex.respond(200, http::kJsonContentType, http::json_text(out));
}

}  // namespace

void add_anthropic_routes(http::Router& router, AnthropicApi& api) {
  auto add = [&](std::string_view pattern, SseRouteBody<AnthropicApi> body) {
    router.add(http::Method::post, pattern, [&api, body](Exchange& ex) {
      return guarded_sse_route(api, ex, body, http::ErrorShape::anthropic);
    });
  };
  add("/v1/messages", messages);
  add("/v1/messages/count_tokens", count_tokens);
}

}  // namespace vkllm::api
