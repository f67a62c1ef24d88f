// The token-to-text pipeline of one reply: generated tokens in, the client's text out. In order:
// incremental UTF-8-safe detokenization (control tokens as text for Harmony), stop strings
// (never emitted, even split across tokens), the output parser (thinking, tool calls, Harmony's
// channels), parallel_tool_calls false (the first call is the answer), and Ollama's runaway
// guard (the same token text more than 30 times in a row ends the reply).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/tokenizer/incremental_decoder.h"
#include "server/prompt/output_parser.h"
#include "server/requests/generation.h"
#include "server/requests/stop_matcher.h"
#include "server/scheduler/token_stream.h"

namespace vkllm::requests {

class ReplyText {
 public:
  ReplyText(const tokenizer::Tokenizer& tok, prompt::ParserConfig config,
            std::vector<std::string> stops, bool parallel_tool_calls);

  // Adds what one generated token shows to `chunk`. Returns true when the reply is complete
  // after it (a stop string, a runaway, the one tool call asked for); later tokens are ignored.
  // Throws http::StatusError 500 when the output cannot be parsed (the parser says why).
  bool feed(int32_t token, GenerationChunk& chunk);
  // End of the reply: the text held back (an unfinished character, a partial stop string, the
  // parser's undecided tail) into `chunk`.
  void finish(GenerationChunk& chunk);

  // The stop string that ended the reply, if one did.
  const std::string& stop_sequence() const { return stop_sequence_; }

 private:
  void add(prompt::ParsedDelta& delta, GenerationChunk& chunk);

  const tokenizer::Tokenizer& tok_;
  tokenizer::IncrementalDecoder decoder_;
  StopMatcher stops_;
  prompt::OutputParser parser_;
  bool parallel_tool_calls_;
  size_t calls_seen_ = 0;  // tool calls handed out so far
  std::string last_piece_;
  int repeats_ = 0;
  bool done_ = false;
  std::string stop_sequence_;
};

// A generated token's log-probability (and its alternatives) with their text, as the routes send
// them.
TokenLogprobText logprob_text(const tokenizer::Tokenizer& tok, int32_t token,
                              const sched::TokenLogprob& lp);

}  // namespace vkllm::requests
