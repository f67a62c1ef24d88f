#include "server/api/inference_response.h"

#include <chrono>

#include "server/api/time_format.h"

namespace vkllm::api {

namespace {

using nlohmann::ordered_json;

void add_metrics(ordered_json& j, const requests::GenerationChunk& c) {
  if (!c.done) return;
  if (!c.done_reason.empty()) j["done_reason"] = c.done_reason;
  auto put = [&](const char* key, int64_t v) {
    if (v != 0) j[key] = v;
  };
  put("total_duration", c.total_duration.count());
  put("load_duration", c.load_duration.count());
  put("prompt_eval_count", c.prompt_eval_count);
  put("prompt_eval_duration", c.prompt_eval_duration.count());
  put("eval_count", c.eval_count);
  put("eval_duration", c.eval_duration.count());
}

void add_debug(ordered_json& j, const requests::GenerationChunk& c) {
  if (!c.rendered_template) return;
  j["_debug_info"] = {{"rendered_template", *c.rendered_template}, {"image_count", c.image_count}};
}

}  // namespace

ordered_json tool_call_json(const prompt::ToolCall& call) {
  ordered_json j;
  if (!call.id.empty()) j["id"] = call.id;
  j["function"] = {
      {"index", call.index},
      {"name", call.name},
      {"arguments", call.arguments.is_null() ? ordered_json::object() : call.arguments}};
  return j;
}

ordered_json logprobs_json(const std::vector<requests::TokenLogprobText>& lps) {
  ordered_json arr = ordered_json::array();
  auto bytes_of = [](const std::string& s) {
    ordered_json b = ordered_json::array();
    for (unsigned char c : s) b.push_back(int(c));
    return b;
  };
  for (const auto& lp : lps) {
    ordered_json e;
    e["token"] = lp.token;
    e["logprob"] = lp.logprob;
    if (!lp.token.empty()) e["bytes"] = bytes_of(lp.token);
    if (!lp.top.empty()) {
      ordered_json top = ordered_json::array();
      for (const auto& [t, p] : lp.top) {
        ordered_json te{{"token", t}, {"logprob", p}};
        if (!t.empty()) te["bytes"] = bytes_of(t);
        top.push_back(std::move(te));
      }
      e["top_logprobs"] = std::move(top);
    }
    arr.push_back(std::move(e));
  }
  return arr;
}

ordered_json generate_chunk_json(const std::string& model, const requests::GenerationChunk& c) {
  ordered_json j;
  j["model"] = model;
  j["created_at"] = rfc3339_utc(std::chrono::system_clock::now());
  j["response"] = c.content;
  if (!c.thinking.empty()) j["thinking"] = c.thinking;
  j["done"] = c.done;
  if (!c.tool_calls.empty()) {
    ordered_json calls = ordered_json::array();
    for (const auto& t : c.tool_calls) calls.push_back(tool_call_json(t));
    j["tool_calls"] = std::move(calls);
  }
  if (!c.logprobs.empty()) j["logprobs"] = logprobs_json(c.logprobs);
  if (c.done && !c.context.empty()) j["context"] = c.context;
  add_metrics(j, c);
  add_debug(j, c);
  return j;
}

ordered_json chat_chunk_json(const std::string& model, const requests::GenerationChunk& c) {
  ordered_json j;
  j["model"] = model;
  j["created_at"] = rfc3339_utc(std::chrono::system_clock::now());
  ordered_json msg;
  msg["role"] = "assistant";
  msg["content"] = c.content;
  if (!c.thinking.empty()) msg["thinking"] = c.thinking;
  if (!c.tool_calls.empty()) {
    ordered_json calls = ordered_json::array();
    for (const auto& t : c.tool_calls) calls.push_back(tool_call_json(t));
    msg["tool_calls"] = std::move(calls);
  }
  j["message"] = std::move(msg);
  j["done"] = c.done;
  if (!c.logprobs.empty()) j["logprobs"] = logprobs_json(c.logprobs);
  add_metrics(j, c);
  add_debug(j, c);
  return j;
}

void accumulate(requests::GenerationChunk& total, requests::GenerationChunk&& part) {
  total.content += part.content;
  total.thinking += part.thinking;
  for (auto& t : part.tool_calls) total.tool_calls.push_back(std::move(t));
  for (auto& l : part.logprobs) total.logprobs.push_back(std::move(l));
  if (part.done) {
    total.done = true;
    total.done_reason = std::move(part.done_reason);
    total.total_duration = part.total_duration;
    total.load_duration = part.load_duration;
    total.prompt_eval_duration = part.prompt_eval_duration;
    total.eval_duration = part.eval_duration;
    total.prompt_eval_count = part.prompt_eval_count;
    total.prompt_cached_count = part.prompt_cached_count;
    total.stop_sequence = std::move(part.stop_sequence);
    total.eval_count = part.eval_count;
    total.context = std::move(part.context);
    total.rendered_template = std::move(part.rendered_template);
    total.image_count = part.image_count;
  }
}

}  // namespace vkllm::api
