#include "server/http/streams.h"

#include "server/http/json_text.h"

namespace vkllm::http {

boost::asio::awaitable<void> NdjsonStream::send(const nlohmann::json& object) {
  if (!ex_.response_started()) co_await ex_.start_chunked(200, kNdjsonContentType);
  co_await ex_.write_chunk(json_text(object) + "\n");
}

boost::asio::awaitable<void> NdjsonStream::finish() {
  if (!ex_.response_started()) co_await ex_.start_chunked(200, kNdjsonContentType);
  co_await ex_.finish_chunked();
}

std::string ndjson_line(const nlohmann::ordered_json& object) {
  return json_text(object) + "\n";
}

std::string sse_data(const nlohmann::ordered_json& data) {
  return "data: " + json_text(data) + "\n\n";
}

std::string sse_event(std::string_view event, const nlohmann::ordered_json& data) {
  return "event: " + std::string(event) + "\n" + sse_data(data);
}

}  // namespace vkllm::http
