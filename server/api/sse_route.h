// What the /v1 routes (OpenAI's and Anthropic's) share around a handler: the SSE side of a
// response (the stream starts with the first write), one generation streamed as events or
// accumulated for a stream:false answer, and the guard that answers any failure in the route
// family's error shape, with its status before the response started, as a final SSE event (and
// the end of the stream) after.
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>

#include "server/api/cancel_on_disconnect.h"
#include "server/api/inference_response.h"
#include "server/http/exchange.h"
#include "server/scheduler/generation.h"
#include "server/scheduler/request_error.h"

namespace vkllm::api {

// A route family's errors: the JSON body of an error response and the SSE event of a failure
// mid-stream.
using ErrorText = std::function<std::string(unsigned status, std::string_view message)>;

struct SseWriter {
  http::Exchange& ex;
  ErrorText error_text;  // a route may replace it (/v1/responses numbers its events)
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
boost::asio::awaitable<bool> generate_sse_or_whole(sched::GenerationService& service,
                                                   http::Exchange& ex, SseWriter& sse,
                                                   sched::GenerationRequest request, bool stream,
                                                   Events& events, sched::GenerationChunk& total) {
  auto cancel = cancel_on_disconnect(ex);
  sched::ChunkSink sink = [&](sched::GenerationChunk& c) -> boost::asio::awaitable<void> {
    if (!stream) {
      accumulate(total, std::move(c));
      co_return;
    }
    const std::string text = events.next(c);
    if (!text.empty()) co_await sse.write(text);
    if (c.done) co_await sse.end();
  };
  // Arguments built outside the co_await expression (GCC 12 coroutine temporaries).
  auto task = service.run(std::move(request), sink, cancel);
  co_await std::move(task);
  co_return !cancel->cancelled && !stream;
}

template <class Api>
using SseRouteBody = boost::asio::awaitable<void> (*)(Api&, http::Exchange&, SseWriter&);

// Runs `body`, answering a failure with `error_body` (before the response started) or the
// writer's error_text event (after; `sse_error` unless the route replaced it).
template <class Api>
boost::asio::awaitable<void> guarded_sse_route(Api& api, http::Exchange& ex, SseRouteBody<Api> body,
                                               ErrorText error_body, ErrorText sse_error) {
  SseWriter sse{ex, std::move(sse_error)};
  unsigned status = 500;
  std::string message;
  bool failed = false;
  try {
    auto task = body(api, ex, sse);
    co_await std::move(task);
  } catch (const http::HttpError& e) {
    failed = true;
    status = e.status();
    message = e.message();
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
    co_await ex.respond(status, http::kJsonContentType, error_body(status, message));
  } else if (!sse.finished) {
    co_await ex.write_chunk(sse.error_text(status, message));
    co_await sse.end();
  }
}

}  // namespace vkllm::api
