// GenerationChunk → the stateless /v1/responses API (compat §2.5): the response object and its
// output items (reasoning, message, function_call), and the named SSE events a streamed response
// is made of, each with a sequence_number. One state machine serves both: stream:false feeds it
// the same chunks and answers response().
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api/openai_response.h"
#include "server/http/status_error.h"
#include "server/requests/generation.h"

namespace vkllm::api {

class ResponsesStream {
 public:
  // `echo`: the request fields the response object repeats (OpenAiRequest::echo).
  ResponsesStream(OpenAiMeta meta, nlohmann::ordered_json echo);

  struct Event {
    std::string type;
    nlohmann::ordered_json data;
    std::string sse() const;  // "event: <type>\ndata: <json>\n\n"
  };

  std::vector<Event> start();                                 // response.created, .in_progress
  std::vector<Event> feed(requests::GenerationChunk& chunk);  // items opened, deltas
  std::vector<Event> finish(const requests::GenerationChunk& done);  // items closed, .completed
  // An `error` event (OpenAI's fields plus the error envelope, so SDKs raise it).
  Event error(const http::StatusError& e);

  // The response object as it stands: status in_progress until finish(), then completed.
  nlohmann::ordered_json response() const;

 private:
  Event event(std::string type, nlohmann::ordered_json fields);
  void close_reasoning(std::vector<Event>& out);
  void close_message(std::vector<Event>& out);
  void open_message(std::vector<Event>& out);
  nlohmann::ordered_json message_part() const;

  OpenAiMeta meta_;
  nlohmann::ordered_json echo_;
  nlohmann::ordered_json output_ = nlohmann::ordered_json::array();
  int64_t sequence_ = 0;
  bool completed_ = false;
  int64_t completed_at_ = 0;
  nlohmann::ordered_json usage_;
  bool any_call_ = false;

  std::optional<size_t> reasoning_;  // index in output_ of the open reasoning item
  std::string reasoning_text_;
  std::optional<size_t> message_;  // index of the open message item
  std::string message_text_;
  nlohmann::ordered_json message_logprobs_ = nlohmann::ordered_json::array();
  std::string pending_space_;  // leading whitespace held back until real text (or the end)
};

}  // namespace vkllm::api
