// Streaming response writers over an Exchange: NDJSON (one JSON object per line, one chunk
// each, so every line is flushed) and Server-Sent Events ("data: ...\n\n", "data: [DONE]").
// The response headers (200, chunked) go out with the first write; errors after that point
// can only be appended to the stream.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "server/http/exchange.h"

namespace vkllm::http {

class NdjsonStream {
 public:
  explicit NdjsonStream(Exchange& ex) : ex_(ex) {}
  boost::asio::awaitable<void> send(const nlohmann::json& object);
  boost::asio::awaitable<void> finish();
  bool started() const { return ex_.response_started(); }

 private:
  Exchange& ex_;
};

class SseStream {
 public:
  explicit SseStream(Exchange& ex) : ex_(ex) {}
  boost::asio::awaitable<void> send(const nlohmann::json& data);  // data: {...}
  // Optional event name (Anthropic-style "event: x" line before the data).
  boost::asio::awaitable<void> send_event(std::string_view event, const nlohmann::json& data);
  boost::asio::awaitable<void> send_done();  // data: [DONE]
  boost::asio::awaitable<void> finish();

 private:
  boost::asio::awaitable<void> write(std::string text);
  Exchange& ex_;
};

}  // namespace vkllm::http
