#include "server/api/openai_responses.h"

#include <chrono>

#include "server/http/error_reply.h"
#include "server/http/streams.h"

namespace vkllm::api {

namespace {

using J = nlohmann::ordered_json;

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string item_id(std::string_view prefix) {
  // The call-id generator's randomness, with the item's own prefix.
  return std::string(prefix) + openai_call_id().substr(5) + openai_call_id().substr(5);
}

bool blank(std::string_view s) {
  return s.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

}  // namespace

std::string ResponsesStream::Event::sse() const {
  return http::sse_event(type, data);
}

ResponsesStream::ResponsesStream(OpenAiMeta meta, J echo)
    : meta_(std::move(meta)), echo_(std::move(echo)) {}

ResponsesStream::Event ResponsesStream::event(std::string type, J fields) {
  J data;
  data["type"] = type;
  data["sequence_number"] = sequence_++;
  for (auto& [k, v] : fields.items()) data[k] = std::move(v);
  return Event{std::move(type), std::move(data)};
}

J ResponsesStream::response() const {
  auto echo = [this](const char* key, J fallback) {
    return echo_.contains(key) ? echo_[key] : fallback;
  };
  J r;
  r["id"] = meta_.id;
  r["object"] = "response";
  r["created_at"] = meta_.created;
  r["completed_at"] = completed_ ? J(completed_at_) : J();
  r["status"] = completed_ ? "completed" : "in_progress";
  r["incomplete_details"] = nullptr;
  r["model"] = meta_.model;
  r["previous_response_id"] = nullptr;
  r["instructions"] = echo("instructions", J());
  r["output"] = completed_ ? output_ : J::array();
  r["error"] = nullptr;
  r["tools"] = echo("tools", J::array());
  r["tool_choice"] = echo("tool_choice", "auto");
  r["truncation"] = echo("truncation", "disabled");
  r["parallel_tool_calls"] = echo("parallel_tool_calls", true);
  r["text"] = echo("text", J{{"format", {{"type", "text"}}}});
  r["top_p"] = echo("top_p", 1.0);
  r["presence_penalty"] = 0;
  r["frequency_penalty"] = 0;
  r["top_logprobs"] = echo("top_logprobs", 0);
  r["temperature"] = echo("temperature", 1.0);
  r["reasoning"] = echo("reasoning", J());
  r["usage"] = completed_ ? usage_ : J();
  r["max_output_tokens"] = echo("max_output_tokens", J());
  r["max_tool_calls"] = nullptr;
  r["store"] = false;
  r["background"] = false;
  r["service_tier"] = "default";
  r["metadata"] = echo("metadata", J::object());
  r["safety_identifier"] = nullptr;
  r["prompt_cache_key"] = nullptr;
  return r;
}

std::vector<ResponsesStream::Event> ResponsesStream::start() {
  std::vector<Event> out;
  out.push_back(event("response.created", J{{"response", response()}}));
  out.push_back(event("response.in_progress", J{{"response", response()}}));
  return out;
}

J ResponsesStream::message_part() const {
  return J{{"type", "output_text"},
           {"text", message_text_},
           {"annotations", J::array()},
           {"logprobs", message_logprobs_}};
}

void ResponsesStream::close_reasoning(std::vector<Event>& out) {
  if (!reasoning_) return;
  const size_t idx = *reasoning_;
  J& item = output_[idx];
  item["summary"] = J::array({J{{"type", "summary_text"}, {"text", reasoning_text_}}});
  item["encrypted_content"] = reasoning_text_;
  out.push_back(event("response.reasoning_summary_text.done", J{{"item_id", item["id"]},
                                                                {"output_index", idx},
                                                                {"summary_index", 0},
                                                                {"text", reasoning_text_}}));
  out.push_back(event("response.output_item.done", J{{"output_index", idx}, {"item", item}}));
  reasoning_.reset();
}

void ResponsesStream::open_message(std::vector<Event>& out) {
  if (message_) return;
  close_reasoning(out);
  message_ = output_.size();
  message_text_.clear();
  message_logprobs_ = J::array();
  J item{{"id", item_id("msg_")},
         {"type", "message"},
         {"status", "in_progress"},
         {"role", "assistant"},
         {"content", J::array()}};
  output_.push_back(item);
  out.push_back(
      event("response.output_item.added", J{{"output_index", *message_}, {"item", item}}));
  out.push_back(event("response.content_part.added", J{{"item_id", item["id"]},
                                                       {"output_index", *message_},
                                                       {"content_index", 0},
                                                       {"part", message_part()}}));
}

void ResponsesStream::close_message(std::vector<Event>& out) {
  if (!message_) return;
  const size_t idx = *message_;
  J& item = output_[idx];
  item["status"] = "completed";
  item["content"] = J::array({message_part()});
  out.push_back(event("response.output_text.done", J{{"item_id", item["id"]},
                                                     {"output_index", idx},
                                                     {"content_index", 0},
                                                     {"text", message_text_},
                                                     {"logprobs", message_logprobs_}}));
  out.push_back(event("response.content_part.done", J{{"item_id", item["id"]},
                                                      {"output_index", idx},
                                                      {"content_index", 0},
                                                      {"part", message_part()}}));
  out.push_back(event("response.output_item.done", J{{"output_index", idx}, {"item", item}}));
  message_.reset();
}

std::vector<ResponsesStream::Event> ResponsesStream::feed(requests::GenerationChunk& c) {
  std::vector<Event> out;
  if (!c.thinking.empty()) {
    if (!reasoning_) {
      reasoning_ = output_.size();
      reasoning_text_.clear();
      J item{{"id", item_id("rs_")}, {"type", "reasoning"}, {"summary", J::array()}};
      output_.push_back(item);
      out.push_back(
          event("response.output_item.added", J{{"output_index", *reasoning_}, {"item", item}}));
    }
    reasoning_text_ += c.thinking;
    out.push_back(
        event("response.reasoning_summary_text.delta", J{{"item_id", output_[*reasoning_]["id"]},
                                                         {"output_index", *reasoning_},
                                                         {"summary_index", 0},
                                                         {"delta", c.thinking}}));
  }
  // Whitespace before the first real text is held back: a turn that only calls tools has no
  // message item.
  std::string text = c.content;
  if (!message_ && blank(text)) {
    pending_space_ += text;
    text.clear();
  }
  if (!text.empty()) {
    open_message(out);
    text = std::exchange(pending_space_, "") + text;
    message_text_ += text;
    J lps = openai_token_logprobs(c.logprobs);
    for (const auto& lp : lps) message_logprobs_.push_back(lp);
    out.push_back(event("response.output_text.delta", J{{"item_id", output_[*message_]["id"]},
                                                        {"output_index", *message_},
                                                        {"content_index", 0},
                                                        {"delta", text},
                                                        {"logprobs", lps}}));
  }
  if (!c.tool_calls.empty()) {
    close_reasoning(out);
    close_message(out);
    openai_tool_calls_json(c.tool_calls);  // assigns ids to calls that have none
    for (const auto& call : c.tool_calls) {
      any_call_ = true;
      const size_t idx = output_.size();
      const std::string args =
          call.arguments.is_null()
              ? "{}"
              : call.arguments.dump(-1, ' ', false, J::error_handler_t::replace);
      J item{{"id", item_id("fc_")}, {"type", "function_call"}, {"status", "in_progress"},
             {"arguments", ""},      {"call_id", call.id},      {"name", call.name}};
      output_.push_back(item);
      out.push_back(event("response.output_item.added", J{{"output_index", idx}, {"item", item}}));
      out.push_back(event("response.function_call_arguments.delta",
                          J{{"item_id", item["id"]}, {"output_index", idx}, {"delta", args}}));
      out.push_back(event("response.function_call_arguments.done", J{{"item_id", item["id"]},
                                                                     {"output_index", idx},
                                                                     {"name", call.name},
                                                                     {"arguments", args}}));
      J& done = output_[idx];
      done["status"] = "completed";
      done["arguments"] = args;
      out.push_back(event("response.output_item.done", J{{"output_index", idx}, {"item", done}}));
    }
  }
  return out;
}

std::vector<ResponsesStream::Event> ResponsesStream::finish(const requests::GenerationChunk& done) {
  std::vector<Event> out;
  close_reasoning(out);
  if (!message_ && !any_call_) {
    open_message(out);  // a turn without tool calls always has its message, even empty
    message_text_ = std::exchange(pending_space_, "");
    if (!message_text_.empty()) {
      out.push_back(event("response.output_text.delta", J{{"item_id", output_[*message_]["id"]},
                                                          {"output_index", *message_},
                                                          {"content_index", 0},
                                                          {"delta", message_text_},
                                                          {"logprobs", J::array()}}));
    }
  }
  close_message(out);
  completed_ = true;
  completed_at_ = unix_now();
  const uint32_t input = done.prompt_eval_count + done.prompt_cached_count;
  usage_ = J{{"input_tokens", input},
             {"input_tokens_details", {{"cached_tokens", done.prompt_cached_count}}},
             {"output_tokens", done.eval_count},
             {"output_tokens_details", {{"reasoning_tokens", 0}}},
             {"total_tokens", input + done.eval_count}};
  out.push_back(event("response.completed", J{{"response", response()}}));
  return out;
}

ResponsesStream::Event ResponsesStream::error(const http::StatusError& e) {
  J envelope = http::error_json(http::ErrorShape::openai, e);
  return event("error", J{{"code", http::openai_error_type(e.status())},
                          {"message", e.message()},
                          {"param", nullptr},
                          {"error", envelope["error"]}});
}

}  // namespace vkllm::api
