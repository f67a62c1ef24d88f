// The streaming wire formats, written once: NDJSON lines (Ollama's routes) and Server-Sent Events
// frames (OpenAI's "data: ...", Anthropic's and the Responses API's "event: ...\ndata: ..."), as
// text for routes that batch several frames into one chunk, and NdjsonStream for those that
// write a line at a time. The response headers (200, chunked) go out with the first write;
// errors after that point can only be appended to the stream.
#pragma once

#include <string>
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

inline constexpr std::string_view kNdjsonContentType = "application/x-ndjson";
inline constexpr std::string_view kSseContentType = "text/event-stream";

// One NDJSON line: the object, compact, and "\n".
std::string ndjson_line(const nlohmann::ordered_json& object);
// "data: {...}\n\n".
std::string sse_data(const nlohmann::ordered_json& data);
// "event: NAME\ndata: {...}\n\n".
std::string sse_event(std::string_view event, const nlohmann::ordered_json& data);
// OpenAI's end of stream.
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

}  // namespace vkllm::http
