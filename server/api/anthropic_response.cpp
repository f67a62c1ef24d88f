#include "server/api/anthropic_response.h"

#include <algorithm>

#include "server/api/openai_response.h"
#include "server/http/streams.h"

namespace vkllm::api {

namespace {

using J = nlohmann::ordered_json;

std::string event(std::string_view name, const J& data) {
  return http::sse_event(name, data);
}

std::string tool_use_id(prompt::ToolCall& c) {
  if (c.id.empty()) c.id = random_id("toolu_", 24);
  return c.id;
}

J tool_use_block(prompt::ToolCall& c, bool with_input) {
  J b;
  b["type"] = "tool_use";
  b["id"] = tool_use_id(c);
  b["name"] = c.name;
  b["input"] = with_input && !c.arguments.is_null() ? c.arguments : J::object();
  return b;
}

}  // namespace

AnthropicMeta anthropic_meta(std::string model, std::vector<std::string> stop_sequences) {
  return AnthropicMeta{random_id("msg_", 24), std::move(model), std::move(stop_sequences)};
}

J anthropic_usage_json(const requests::GenerationChunk& done) {
  return J{{"input_tokens", done.prompt_eval_count},
           {"cache_creation_input_tokens", 0},
           {"cache_read_input_tokens", done.prompt_cached_count},
           {"output_tokens", done.eval_count}};
}

J anthropic_stop_json(const AnthropicMeta& meta, const requests::GenerationChunk& done,
                      bool called) {
  const auto& stops = meta.stop_sequences;
  const bool client_stop = !done.stop_sequence.empty() &&
                           std::find(stops.begin(), stops.end(), done.stop_sequence) != stops.end();
  std::string reason = "end_turn";
  if (called) {
    reason = "tool_use";
  } else if (done.done_reason == "length") {
    reason = "max_tokens";
  } else if (client_stop) {
    reason = "stop_sequence";
  }
  return J{{"stop_reason", reason},
           {"stop_sequence", reason == "stop_sequence" ? J(done.stop_sequence) : J()}};
}

J anthropic_message_json(const AnthropicMeta& meta, requests::GenerationChunk& total) {
  J content = J::array();
  if (!total.thinking.empty()) {
    content.push_back(J{{"type", "thinking"}, {"thinking", total.thinking}, {"signature", ""}});
  }
  if (!total.content.empty()) content.push_back(J{{"type", "text"}, {"text", total.content}});
  for (auto& c : total.tool_calls) content.push_back(tool_use_block(c, true));
  J j;
  j["id"] = meta.id;
  j["type"] = "message";
  j["role"] = "assistant";
  j["model"] = meta.model;
  j["content"] = std::move(content);
  const J stop = anthropic_stop_json(meta, total, !total.tool_calls.empty());
  for (const auto& [k, v] : stop.items()) j[k] = v;
  j["usage"] = anthropic_usage_json(total);
  return j;
}

void AnthropicEvents::open(Block kind, std::string& out) {
  if (block_ == kind) return;
  close(out);
  block_ = kind;
  ++index_;
  const J block = kind == Block::thinking
                      ? J{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}
                      : J{{"type", "text"}, {"text", ""}};
  out += event("content_block_start",
               J{{"type", "content_block_start"}, {"index", index_}, {"content_block", block}});
}

void AnthropicEvents::close(std::string& out) {
  if (block_ == Block::none) return;
  out += event("content_block_stop", J{{"type", "content_block_stop"}, {"index", index_}});
  block_ = Block::none;
}

std::string AnthropicEvents::next(requests::GenerationChunk& c) {
  std::string out;
  if (!started_) {
    started_ = true;
    J message;
    message["id"] = meta_.id;
    message["type"] = "message";
    message["role"] = "assistant";
    message["model"] = meta_.model;
    message["content"] = J::array();
    message["stop_reason"] = nullptr;
    message["stop_sequence"] = nullptr;
    // The prompt's counts are known at the end; message_delta carries them.
    message["usage"] = J{{"input_tokens", 0}, {"output_tokens", 0}};
    out += event("message_start", J{{"type", "message_start"}, {"message", message}});
    out += event("ping", J{{"type", "ping"}});
  }
  auto delta = [&](const J& d) {
    out += event("content_block_delta",
                 J{{"type", "content_block_delta"}, {"index", index_}, {"delta", d}});
  };
  if (!c.thinking.empty()) {
    open(Block::thinking, out);
    delta(J{{"type", "thinking_delta"}, {"thinking", c.thinking}});
  }
  if (!c.content.empty()) {
    open(Block::text, out);
    delta(J{{"type", "text_delta"}, {"text", c.content}});
  }
  for (auto& call : c.tool_calls) {
    close(out);
    called_ = true;
    ++index_;
    out += event("content_block_start", J{{"type", "content_block_start"},
                                          {"index", index_},
                                          {"content_block", tool_use_block(call, false)}});
    const J& args = call.arguments.is_null() ? J::object() : call.arguments;
    delta(J{{"type", "input_json_delta"},
            {"partial_json", args.dump(-1, ' ', false, J::error_handler_t::replace)}});
    out += event("content_block_stop", J{{"type", "content_block_stop"}, {"index", index_}});
  }
  if (c.done) {
    close(out);
    J usage = anthropic_usage_json(c);
    out += event("message_delta", J{{"type", "message_delta"},
                                    {"delta", anthropic_stop_json(meta_, c, called_)},
                                    {"usage", std::move(usage)}});
    out += event("message_stop", J{{"type", "message_stop"}});
  }
  return out;
}

}  // namespace vkllm::api
