// What the /v1 routes (OpenAI's and Anthropic's) share around a handler: the SSE side of a
// response (the stream starts with the first write), one generation streamed as events or
// accumulated for a stream:false answer, and the guard that answers any failure in the route
// family's error shape (http/error_reply.h), with its status before the response started, as a
// final SSE event (and the end of the stream) after.
#pragma once

#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>

#include "server/api/inference_response.h"
#include "server/http/error_reply.h"
#include "server/http/exchange.h"
#include "server/http/until_disconnect.h"
#include "server/requests/generation.h"

namespace vkllm::api {

// The SSE event that ends a stream failing mid-way.
using ErrorEvent = std::function<std::string(const http::StatusError& error)>;

struct SseWriter {
  http::Exchange& ex;
  ErrorEvent error_event;  // a route may replace it (/v1/responses numbers its events)
  bool finished = false;

  boost::asio::awaitable<void> write(const std::string& text) {
    if (!ex.response_started()) {
      ex.add_header("Cache-Control", "no-cache");
      co_await ex.start_chunked(200, "text/event-stream");
    }
    co_await ex.write_chunk(text);
  }
  boost::asio::awaitable<void> end() {
    finished = true;
    co_await ex.finish_chunked();
  }
};

// Runs one generation: with `stream`, each chunk goes out as `events.next(chunk)`'s SSE text;
// without, the chunks accumulate in `total`. True when `total` is complete and its JSON answer
// is still to be sent (not streamed, and the client is still there).
template <class Events>
boost::asio::awaitable<bool> generate_sse_or_whole(requests::GenerationService& service,
                                                   http::Exchange& ex, SseWriter& sse,
                                                   requests::GenerationRequest request, bool stream,
                                                   Events& events,
                                                   requests::GenerationChunk& total) {
  requests::ChunkSink sink = [&](requests::GenerationChunk& c) -> boost::asio::awaitable<void> {
    if (!stream) {
      accumulate(total, std::move(c));
      co_return;
    }
    const std::string text = events.next(c);
    if (!text.empty()) co_await sse.write(text);
    if (c.done) co_await sse.end();
  };
  // Arguments built outside the co_await expression (GCC 12 coroutine temporaries).
  auto task = service.run(std::move(request), sink);
  auto guarded = http::until_disconnect(ex, std::move(task));
  const bool complete = co_await std::move(guarded);
  co_return complete && !stream;
}

// The shape's own end-of-stream error event.
inline ErrorEvent shape_error_event(http::ErrorShape shape) {
  return [shape](const http::StatusError& e) { return http::stream_error(shape, e); };
}

template <class Api>
using SseRouteBody = boost::asio::awaitable<void> (*)(Api&, http::Exchange&, SseWriter&);

// Runs `body`, answering a failure in `shape`: a whole error response before the response
// started, the writer's error_event after (the shape's own unless the route replaced it).
template <class Api>
boost::asio::awaitable<void> guarded_sse_route(Api& api, http::Exchange& ex, SseRouteBody<Api> body,
                                               http::ErrorShape shape) {
  // Built outside the braces (GCC 12 mis-destroys braced temporaries inside coroutines).
  ErrorEvent event = shape_error_event(shape);
  SseWriter sse{ex, std::move(event)};
  std::optional<http::StatusError> failure;
  try {
    auto task = body(api, ex, sse);
    co_await std::move(task);
  } catch (const std::exception& e) {
    failure = http::status_error_of(e);
  }
  if (!failure) co_return;
  if (!ex.response_started()) {
    co_await ex.respond(failure->status(), http::kJsonContentType,
                        http::error_body(shape, *failure));
  } else if (!sse.finished) {
    co_await ex.write_chunk(sse.error_event(*failure));
    co_await sse.end();
  }
}

}  // namespace vkllm::api
