#include "server/requests/reply_text.h"

#include <utility>

#include "server/http/status_error.h"

namespace vkllm::requests {

namespace {

constexpr int kRunawayRepeats = 30;  // Ollama's limit

std::string trimmed(std::string s) {
  s.erase(0, s.find_first_not_of(" \t\n\r"));
  s.erase(s.find_last_not_of(" \t\n\r") + 1);
  return s;
}

}  // namespace

ReplyText::ReplyText(const tokenizer::Tokenizer& tok, prompt::ParserConfig config,
                     std::vector<std::string> stops, bool parallel_tool_calls)
    : tok_(tok),
      // Harmony's parser reads control tokens (<|channel|>, <|message|>...) as text.
      decoder_(tok, false, config.special_tokens),
      stops_(std::move(stops)),
      parser_(std::move(config)),
      parallel_tool_calls_(parallel_tool_calls) {}

void ReplyText::add(prompt::ParsedDelta& d, GenerationChunk& chunk) {
  if (!d.error.empty()) throw http::StatusError(500, d.error);
  chunk.content += d.content;
  chunk.thinking += d.thinking;
  for (auto& call : d.tool_calls) {
    // parallel_tool_calls false: the first call is the answer, later ones are dropped.
    if (parallel_tool_calls_ || calls_seen_ == 0) chunk.tool_calls.push_back(std::move(call));
    ++calls_seen_;
  }
}

bool ReplyText::feed(int32_t token, GenerationChunk& chunk) {
  if (done_) return true;
  const std::string piece = trimmed(tok_.token_to_piece(token));
  repeats_ = !piece.empty() && piece == last_piece_ ? repeats_ + 1 : 0;
  last_piece_ = piece;
  auto r = stops_.feed(decoder_.push(token));
  auto d = parser_.feed(r.text);
  add(d, chunk);
  if (r.stopped) stop_sequence_ = r.matched;
  done_ = r.stopped || repeats_ >= kRunawayRepeats || (!parallel_tool_calls_ && calls_seen_ > 0);
  return done_;
}

void ReplyText::finish(GenerationChunk& chunk) {
  auto r = stops_.feed(decoder_.finish());
  const std::string rest = r.text + (r.stopped ? std::string() : stops_.flush());
  auto d = parser_.feed(rest);
  add(d, chunk);
  auto tail = parser_.finish();
  add(tail, chunk);
}

TokenLogprobText logprob_text(const tokenizer::Tokenizer& tok, int32_t token,
                              const sched::TokenLogprob& lp) {
  TokenLogprobText t;
  t.token = tok.token_to_piece(token, true);
  t.logprob = lp.logprob;
  for (const auto& top : lp.top)
    t.top.emplace_back(tok.token_to_piece(top.token, true), top.logprob);
  return t;
}

}  // namespace vkllm::requests
