// GenerationChunk → Anthropic's Messages objects: the message (thinking, text and tool_use
// blocks, stop_reason, stop_sequence, usage with cache_read_input_tokens), the streamed event
// sequence (message_start, ping, content_block_start / _delta / _stop with text_delta,
// thinking_delta and input_json_delta, message_delta, message_stop), and the error shape
// {"type":"error","error":{"type","message"}} with its types by HTTP status.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/requests/generation.h"

namespace vkllm::api {

struct AnthropicMeta {
  std::string id;                           // msg_…
  std::string model;                        // as the client sent it
  std::vector<std::string> stop_sequences;  // the client's (stop_reason "stop_sequence")
};
AnthropicMeta anthropic_meta(std::string model, std::vector<std::string> stop_sequences);

// {input_tokens (evaluated), cache_creation_input_tokens, cache_read_input_tokens (prefix-cache
// hits), output_tokens}.
nlohmann::ordered_json anthropic_usage_json(const requests::GenerationChunk& done);
// {"stop_reason","stop_sequence"}: tool_use when tools were called, max_tokens at the limit,
// stop_sequence for one of the client's stop_sequences (a template's own stop ends the turn),
// else end_turn.
nlohmann::ordered_json anthropic_stop_json(const AnthropicMeta& meta,
                                           const requests::GenerationChunk& done, bool called);

// stream:false (`total` is the accumulated generation).
nlohmann::ordered_json anthropic_message_json(const AnthropicMeta& meta,
                                              requests::GenerationChunk& total);

// A streamed message, chunk by chunk: the SSE text each generation chunk becomes. Blocks open
// as their kind of output starts (thinking, text, each tool call) and close when another kind
// follows or the message ends.
class AnthropicEvents {
 public:
  explicit AnthropicEvents(AnthropicMeta meta) : meta_(std::move(meta)) {}
  std::string next(requests::GenerationChunk& chunk);

 private:
  enum class Block { none, thinking, text };
  void open(Block kind, std::string& out);
  void close(std::string& out);

  AnthropicMeta meta_;
  bool started_ = false;
  bool called_ = false;
  Block block_ = Block::none;
  int index_ = -1;  // the current (or last) content block's index
};

}  // namespace vkllm::api
