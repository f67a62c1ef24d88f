#include "server/prompt/output_parser.h"

#include <optional>
#include <random>
#include <utility>

#include "server/prompt/gemma4_parser.h"
#include "server/prompt/harmony_parser.h"
#include "server/prompt/lfm2_parser.h"
#include "server/prompt/ministral_parser.h"
#include "server/prompt/qwen35_parser.h"
#include "server/prompt/qwen_tool_calls.h"
#include "server/prompt/thinking_splitter.h"
#include "server/prompt/tool_call_scanner.h"

namespace vkllm::prompt {

struct OutputParser::Impl {
  std::optional<ThinkingSplitter> thinking;
  std::optional<ToolCallScanner> tools;
  std::optional<HarmonyParser> harmony;
  std::optional<Qwen35Parser> qwen35;            // PARSER qwen3.5
  std::optional<QwenToolCallParser> qwen_coder;  // PARSER qwen3-coder
  std::optional<Gemma4Parser> gemma4;            // PARSER gemma4, gemma4-no-thinking
  std::optional<Lfm2Parser> lfm2;                // PARSER lfm2, lfm2-thinking
  std::optional<MinistralParser> ministral;      // PARSER ministral
  int next_index = 0;
  std::mt19937_64 rng{std::random_device{}()};

  // Ollama's call ids: "call_" and 8 of [a-z0-9].
  std::string fresh_id() {
    static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    std::uniform_int_distribution<size_t> pick(0, sizeof(kAlphabet) - 2);
    std::string id = "call_";
    for (int i = 0; i < 8; ++i) id += kAlphabet[pick(rng)];
    return id;
  }

  ParsedDelta run(std::string_view text, bool last) {
    ParsedDelta out;
    if (harmony) {
      harmony->feed(text, out);
      if (last) harmony->finish(out);
    } else if (qwen35) {
      qwen35->feed(text, out);
      if (last) qwen35->finish(out);
    } else if (qwen_coder) {
      qwen_coder->feed(text, out.content, out.tool_calls);
      if (last) qwen_coder->finish(out.content);
    } else if (gemma4) {
      gemma4->feed(text, out);
      if (last) gemma4->finish(out);
    } else if (lfm2) {
      lfm2->feed(text, out);
      if (last) lfm2->finish(out);
    } else if (ministral) {
      ministral->feed(text, out);
      if (last) ministral->finish(out);
    } else {
      std::string answer;
      if (thinking) {
        thinking->feed(text, out.thinking, answer);
        if (last) thinking->finish(out.thinking, answer);
      } else {
        answer.assign(text);
      }
      if (tools) {
        tools->feed(answer, out.content, out.tool_calls);
        if (last) tools->finish(out.content, out.tool_calls);
      } else {
        out.content = std::move(answer);
      }
    }
    for (auto& call : out.tool_calls) {
      call.id = fresh_id();
      call.index = next_index++;
    }
    return out;
  }
};

OutputParser::OutputParser(ParserConfig config) : impl_(std::make_unique<Impl>()) {
  if (config.harmony) {
    impl_->harmony.emplace(config.harmony_prefill, HarmonyFunctionNames(config.tool_names));
    return;
  }
  if (config.builtin_parser == "qwen3.5") {
    impl_->qwen35.emplace(config.thinking, config.assistant_prefill, std::move(config.tools));
    return;
  }
  if (config.builtin_parser == "qwen3-coder") {
    impl_->qwen_coder.emplace(std::move(config.tools));
    return;
  }
  if (config.builtin_parser.starts_with("gemma4")) {
    impl_->gemma4.emplace(config.thinking, config.after_tool_result, std::move(config.tools));
    return;
  }
  if (config.builtin_parser.starts_with("lfm2")) {
    impl_->lfm2.emplace(config.thinking, config.assistant_prefill, std::move(config.tool_names));
    return;
  }
  if (config.builtin_parser == "ministral") {
    impl_->ministral.emplace(std::move(config.tool_names));
    return;
  }
  // Without thinking the tags stay in the content, as Ollama leaves them for requests that did
  // not ask to think.
  if (config.thinking && !config.think_open.empty() && !config.think_close.empty()) {
    impl_->thinking.emplace(std::move(config.think_open), std::move(config.think_close),
                            config.starts_in_thinking);
  }
  if (!config.tool_names.empty()) {
    impl_->tools.emplace(std::move(config.tool_tag), std::move(config.tool_names));
  }
}

OutputParser::~OutputParser() = default;
OutputParser::OutputParser(OutputParser&&) noexcept = default;

ParsedDelta OutputParser::feed(std::string_view text) {
  return impl_->run(text, false);
}

ParsedDelta OutputParser::finish() {
  return impl_->run({}, true);
}

}  // namespace vkllm::prompt
