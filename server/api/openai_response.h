// GenerationChunk → OpenAI's response objects (compat §2.1, §2.2, §0.3): chat.completion and
// chat.completion.chunk, text_completion, usage, finish_reason, tool calls with ids and string
// arguments, logprobs in OpenAI's shapes, and OpenAI's error envelope (also as an SSE event).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/requests/generation.h"

namespace vkllm::api {

// What every object of one response shares.
struct OpenAiMeta {
  std::string id;  // chatcmpl-…, cmpl-…, resp_…
  int64_t created = 0;
  std::string model;  // as the client sent it
};
OpenAiMeta openai_meta(std::string_view id_prefix, std::string model);
// "call_" + 8 of [a-z0-9], the id shape OpenAI clients expect on tool calls.
std::string openai_call_id();
// `prefix` + n random characters of [a-z0-9] (response and tool-call ids).
std::string random_id(std::string_view prefix, size_t n);

// stop / length, and tool_calls when the model called tools.
std::string openai_finish_reason(const requests::GenerationChunk& done, bool had_tool_calls);
nlohmann::ordered_json openai_usage_json(const requests::GenerationChunk& done);
// Tool calls in OpenAI's shape: id, index, type "function", function.name, arguments string.
// Calls without an id get one (and keep it: the same id goes out in every later view).
nlohmann::ordered_json openai_tool_calls_json(std::vector<prompt::ToolCall>& calls);
// [{"token","logprob","bytes","top_logprobs":[...]}] (chat's logprobs.content, responses').
nlohmann::ordered_json openai_token_logprobs(const std::vector<requests::TokenLogprobText>& lps);

// /v1/chat/completions, stream:false (`total` is the accumulated generation).
nlohmann::ordered_json chat_completion_json(const OpenAiMeta& meta,
                                            requests::GenerationChunk& total);

// /v1/chat/completions streaming: the chunks one generation chunk becomes (none, one, or two
// when it carries thinking and content: reasoning first). The first delta of the stream has
// the role; `first` tracks that.
std::vector<nlohmann::ordered_json> chat_delta_chunks(const OpenAiMeta& meta,
                                                      requests::GenerationChunk& chunk,
                                                      bool& first);
// {"role":"assistant","content":""}: opens a stream that finishes before any text.
nlohmann::ordered_json chat_role_chunk(const OpenAiMeta& meta);
nlohmann::ordered_json chat_finish_chunk(const OpenAiMeta& meta, std::string_view finish_reason);
nlohmann::ordered_json chat_usage_chunk(const OpenAiMeta& meta,
                                        const requests::GenerationChunk& done);

// /v1/completions: stream:false object, and a streamed chunk (`finish_reason` empty → null).
nlohmann::ordered_json completion_json(const OpenAiMeta& meta,
                                       const requests::GenerationChunk& total);
nlohmann::ordered_json completion_chunk(const OpenAiMeta& meta,
                                        const requests::GenerationChunk& chunk,
                                        std::string_view finish_reason);
nlohmann::ordered_json completion_usage_chunk(const OpenAiMeta& meta,
                                              const requests::GenerationChunk& done);

// A streamed response, chunk by chunk: the SSE text each generation chunk becomes (maybe empty),
// ending with the finish chunk, the usage chunk when asked for, and "data: [DONE]".
// /v1/chat/completions: the role goes out once, and the finish reason says whether tools were
// called.
class ChatCompletionEvents {
 public:
  ChatCompletionEvents(OpenAiMeta meta, bool usage) : meta_(std::move(meta)), usage_(usage) {}
  std::string next(requests::GenerationChunk& chunk);

 private:
  OpenAiMeta meta_;
  bool usage_;
  bool first_ = true;
  bool called_ = false;
};
// /v1/completions.
class CompletionEvents {
 public:
  CompletionEvents(OpenAiMeta meta, bool usage) : meta_(std::move(meta)), usage_(usage) {}
  std::string next(requests::GenerationChunk& chunk);

 private:
  OpenAiMeta meta_;
  bool usage_;
};

}  // namespace vkllm::api
