#include "server/api/openai_response.h"
#include "server/http/streams.h"

#include <chrono>
#include <random>

#include "server/http/json_text.h"

namespace vkllm::api {

namespace {

using J = nlohmann::ordered_json;

std::string random_alnum(size_t n) {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<size_t> pick(0, sizeof(kAlphabet) - 2);
  std::string s;
  for (size_t i = 0; i < n; ++i) s += kAlphabet[pick(rng)];
  return s;
}

J bytes_of(const std::string& s) {
  J b = J::array();
  for (unsigned char c : s) b.push_back(int(c));
  return b;
}

J header(const OpenAiMeta& meta, std::string_view object) {
  J j;
  j["id"] = meta.id;
  j["object"] = object;
  j["created"] = meta.created;
  j["model"] = meta.model;
  j["system_fingerprint"] = "fp_ollama";
  return j;
}

// Completions' legacy logprobs: parallel arrays, alternatives as {token: logprob} maps.
J completion_logprobs(const std::vector<requests::TokenLogprobText>& lps, size_t offset) {
  J tokens = J::array(), logprobs = J::array(), top = J::array(), offsets = J::array();
  for (const auto& lp : lps) {
    tokens.push_back(lp.token);
    logprobs.push_back(lp.logprob);
    J alts = J::object();
    for (const auto& [t, p] : lp.top) alts[t] = p;
    top.push_back(std::move(alts));
    offsets.push_back(offset);
    offset += lp.token.size();
  }
  return J{{"tokens", tokens},
           {"token_logprobs", logprobs},
           {"top_logprobs", top},
           {"text_offset", offsets}};
}

}  // namespace

OpenAiMeta openai_meta(std::string_view id_prefix, std::string model) {
  OpenAiMeta m;
  m.id = std::string(id_prefix) + random_alnum(24);
  m.created = std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  m.model = std::move(model);
  return m;
}

std::string openai_call_id() {
  return "call_" + random_alnum(8);
}

std::string random_id(std::string_view prefix, size_t n) {
  return std::string(prefix) + random_alnum(n);
}

std::string openai_finish_reason(const requests::GenerationChunk& done, bool had_tool_calls) {
  if (done.done_reason == "length") return "length";
  return had_tool_calls ? "tool_calls" : "stop";
}

J openai_usage_json(const requests::GenerationChunk& done) {
  // The whole prompt, prefix-cache hits included (Ollama's prompt_eval_count leaves them out).
  const uint32_t prompt = done.prompt_eval_count + done.prompt_cached_count;
  return J{{"prompt_tokens", prompt},
           {"completion_tokens", done.eval_count},
           {"total_tokens", prompt + done.eval_count},
           {"prompt_tokens_details", {{"cached_tokens", done.prompt_cached_count}}}};
}

J openai_tool_calls_json(std::vector<prompt::ToolCall>& calls) {
  J out = J::array();
  for (auto& c : calls) {
    if (c.id.empty()) c.id = openai_call_id();
    const J& args = c.arguments.is_null() ? J::object() : c.arguments;
    out.push_back(J{{"id", c.id},
                    {"index", c.index},
                    {"type", "function"},
                    {"function",
                     {{"name", c.name},
                      {"arguments", args.dump(-1, ' ', false, J::error_handler_t::replace)}}}});
  }
  return out;
}

J openai_token_logprobs(const std::vector<requests::TokenLogprobText>& lps) {
  J arr = J::array();
  for (const auto& lp : lps) {
    J top = J::array();
    for (const auto& [t, p] : lp.top) {
      top.push_back(J{{"token", t}, {"logprob", p}, {"bytes", bytes_of(t)}});
    }
    arr.push_back(J{{"token", lp.token},
                    {"logprob", lp.logprob},
                    {"bytes", bytes_of(lp.token)},
                    {"top_logprobs", std::move(top)}});
  }
  return arr;
}

J chat_completion_json(const OpenAiMeta& meta, requests::GenerationChunk& total) {
  J j = header(meta, "chat.completion");
  J msg;
  msg["role"] = "assistant";
  msg["content"] = total.content;
  if (!total.thinking.empty()) msg["reasoning"] = total.thinking;
  if (!total.tool_calls.empty()) msg["tool_calls"] = openai_tool_calls_json(total.tool_calls);
  J choice;
  choice["index"] = 0;
  choice["message"] = std::move(msg);
  choice["finish_reason"] = openai_finish_reason(total, !total.tool_calls.empty());
  choice["logprobs"] =
      total.logprobs.empty() ? J() : J{{"content", openai_token_logprobs(total.logprobs)}};
  j["choices"] = J::array({std::move(choice)});
  j["usage"] = openai_usage_json(total);
  return j;
}

std::vector<J> chat_delta_chunks(const OpenAiMeta& meta, requests::GenerationChunk& c,
                                 bool& first) {
  std::vector<J> out;
  auto emit = [&](J delta, bool with_logprobs) {
    if (first) {
      J d;
      d["role"] = "assistant";
      for (auto& [k, v] : delta.items()) d[k] = std::move(v);
      delta = std::move(d);
      first = false;
    }
    J j = header(meta, "chat.completion.chunk");
    J choice;
    choice["index"] = 0;
    choice["delta"] = std::move(delta);
    if (with_logprobs && !c.logprobs.empty()) {
      choice["logprobs"] = J{{"content", openai_token_logprobs(c.logprobs)}};
    }
    choice["finish_reason"] = nullptr;
    j["choices"] = J::array({std::move(choice)});
    out.push_back(std::move(j));
  };
  const bool answer = !c.content.empty() || !c.tool_calls.empty();
  if (!c.thinking.empty()) {
    J d;
    if (!answer) d["content"] = "";
    d["reasoning"] = c.thinking;
    emit(std::move(d), !answer);
  }
  if (answer || (c.thinking.empty() && !c.logprobs.empty())) {
    J d;
    d["content"] = c.content;
    if (!c.tool_calls.empty()) d["tool_calls"] = openai_tool_calls_json(c.tool_calls);
    emit(std::move(d), true);
  }
  return out;
}

J chat_role_chunk(const OpenAiMeta& meta) {
  J j = header(meta, "chat.completion.chunk");
  j["choices"] = J::array({J{{"index", 0},
                             {"delta", {{"role", "assistant"}, {"content", ""}}},
                             {"finish_reason", nullptr}}});
  return j;
}

J chat_finish_chunk(const OpenAiMeta& meta, std::string_view finish_reason) {
  J j = header(meta, "chat.completion.chunk");
  j["choices"] = J::array(
      {J{{"index", 0}, {"delta", J::object()}, {"finish_reason", std::string(finish_reason)}}});
  return j;
}

J chat_usage_chunk(const OpenAiMeta& meta, const requests::GenerationChunk& done) {
  J j = header(meta, "chat.completion.chunk");
  j["choices"] = J::array();
  j["usage"] = openai_usage_json(done);
  return j;
}

J completion_json(const OpenAiMeta& meta, const requests::GenerationChunk& total) {
  J j = header(meta, "text_completion");
  J choice;
  choice["text"] = total.content;
  choice["index"] = 0;
  choice["logprobs"] = total.logprobs.empty() ? J() : completion_logprobs(total.logprobs, 0);
  choice["finish_reason"] = openai_finish_reason(total, false);
  j["choices"] = J::array({std::move(choice)});
  j["usage"] = openai_usage_json(total);
  return j;
}

J completion_chunk(const OpenAiMeta& meta, const requests::GenerationChunk& c,
                   std::string_view finish_reason) {
  J j = header(meta, "text_completion");
  J choice;
  choice["text"] = c.content;
  choice["index"] = 0;
  choice["logprobs"] = c.logprobs.empty() ? J() : completion_logprobs(c.logprobs, 0);
  choice["finish_reason"] = finish_reason.empty() ? J() : J(std::string(finish_reason));
  j["choices"] = J::array({std::move(choice)});
  return j;
}

J completion_usage_chunk(const OpenAiMeta& meta, const requests::GenerationChunk& done) {
  J j = header(meta, "text_completion");
  j["choices"] = J::array();
  j["usage"] = openai_usage_json(done);
  return j;
}

std::string ChatCompletionEvents::next(requests::GenerationChunk& c) {
  called_ = called_ || !c.tool_calls.empty();
  std::string text;
  for (const auto& d : chat_delta_chunks(meta_, c, first_)) text += http::sse_data(d);
  if (c.done) {
    if (first_) text += http::sse_data(chat_role_chunk(meta_));
    first_ = false;
    text += http::sse_data(chat_finish_chunk(meta_, openai_finish_reason(c, called_)));
    if (usage_) text += http::sse_data(chat_usage_chunk(meta_, c));
    text += http::kSseDone;
  }
  return text;
}

std::string CompletionEvents::next(requests::GenerationChunk& c) {
  std::string text;
  if (!c.content.empty() || !c.logprobs.empty())
    text += http::sse_data(completion_chunk(meta_, c, ""));
  if (c.done) {
    const requests::GenerationChunk none;
    text += http::sse_data(completion_chunk(meta_, none, openai_finish_reason(c, false)));
    if (usage_) text += http::sse_data(completion_usage_chunk(meta_, c));
    text += http::kSseDone;
  }
  return text;
}

}  // namespace vkllm::api
