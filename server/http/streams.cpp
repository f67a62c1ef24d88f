#include "server/http/streams.h"

#include "server/http/json_text.h"

namespace vkllm::http {

boost::asio::awaitable<void> NdjsonStream::send(const nlohmann::json& object) {
  if (!ex_.response_started()) co_await ex_.start_chunked(200, "application/x-ndjson");
  co_await ex_.write_chunk(json_text(object) + "\n");
}

boost::asio::awaitable<void> NdjsonStream::finish() {
  if (!ex_.response_started()) co_await ex_.start_chunked(200, "application/x-ndjson");
  co_await ex_.finish_chunked();
}

boost::asio::awaitable<void> SseStream::write(std::string text) {
  if (!ex_.response_started()) co_await ex_.start_chunked(200, "text/event-stream");
  co_await ex_.write_chunk(text);
}

boost::asio::awaitable<void> SseStream::send(const nlohmann::json& data) {
  co_await write("data: " + json_text(data) + "\n\n");
}

boost::asio::awaitable<void> SseStream::send_event(std::string_view event,
                                                   const nlohmann::json& data) {
  co_await write("event: " + std::string(event) + "\ndata: " + json_text(data) + "\n\n");
}

boost::asio::awaitable<void> SseStream::send_done() {
  co_await write("data: [DONE]\n\n");
}

boost::asio::awaitable<void> SseStream::finish() {
  if (!ex_.response_started()) co_await ex_.start_chunked(200, "text/event-stream");
  co_await ex_.finish_chunked();
}

}  // namespace vkllm::http
