// Truncation to num_ctx: the bisecting search finds exactly what Ollama's newest-to-oldest scan
// finds, with O(log n) renders instead of O(n) (20,000 messages took 44 s the old way).
#include <gtest/gtest.h>

#include <cmath>

#include "server/prompt/prompt.h"
#include "tests/support/seeded.h"

using namespace vkllm::prompt;

namespace {

Message trunc_msg(std::string role, std::string content) {
  return Message{std::move(role), std::move(content), "", {}, {}, "", ""};
}

const std::string kTruncRoles = "{{ range .Messages }}<{{ .Role }}>{{ .Content }}{{ end }}";

PromptBuilder roles_builder() {
  ModelPrompt m;
  m.template_text = kTruncRoles;
  return PromptBuilder(m);
}

std::string render_untruncated(const PromptBuilder& b, std::vector<Message> msgs) {
  ChatInput in;
  in.messages = std::move(msgs);
  in.truncate = false;
  return b.render_chat(in, 0, {}).text;
}

// Ollama's chatPrompt written out: from the newest message back, the first one that does not
// fit ends the scan; the system messages before that one are kept in front of the rest.
std::string ollama_scan(const PromptBuilder& b, const std::vector<Message>& msgs, size_t num_ctx,
                        const TokenCounter& count) {
  auto system_before = [&](size_t i) {
    std::vector<Message> s;
    for (size_t j = 0; j < i; ++j)
      if (msgs[j].role == "system") s.push_back(msgs[j]);
    return s;
  };
  size_t n = msgs.size() - 1;
  std::vector<Message> system;
  for (size_t i = n; i-- > 0;) {
    system = system_before(i);
    std::vector<Message> part = system;
    part.insert(part.end(), msgs.begin() + static_cast<ptrdiff_t>(i), msgs.end());
    if (count(render_untruncated(b, part)) > num_ctx) break;
    n = i;
  }
  std::vector<Message> part = system;
  part.insert(part.end(), msgs.begin() + static_cast<ptrdiff_t>(n), msgs.end());
  return render_untruncated(b, part);
}

TEST(PromptTruncation, FindsWhatOllamasScanFindsOnRandomConversations) {
  vkllm::test::Seeded<> s;
  SCOPED_TRACE(s.trace());
  const PromptBuilder b = roles_builder();
  TokenCounter bytes = [](std::string_view text) { return text.size(); };
  const char* roles[] = {"system", "user", "assistant"};
  for (int round = 0; round < 300; ++round) {
    std::vector<Message> msgs;
    const int n = 1 + static_cast<int>(s.rng() % 12);
    for (int i = 0; i < n; ++i) {
      msgs.push_back(trunc_msg(roles[s.rng() % 3], std::string(s.rng() % 20, 'x')));
    }
    const size_t full = render_untruncated(b, msgs).size();
    const size_t num_ctx = s.rng() % (full + 10);
    ChatInput in;
    in.messages = msgs;
    EXPECT_EQ(b.render_chat(in, static_cast<uint32_t>(num_ctx), bytes).text,
              ollama_scan(b, msgs, num_ctx, bytes))
        << "round " << round << ", " << n << " messages, num_ctx " << num_ctx;
  }
}

TEST(PromptTruncation, RendersLogarithmicallyOftenInTheMessageCount) {
  const PromptBuilder b = roles_builder();
  size_t renders = 0;
  TokenCounter counting = [&renders](std::string_view text) {
    ++renders;
    return text.size();
  };
  ChatInput in;
  in.messages.assign(20000,
                     trunc_msg("system", ""));  // the reproducer: 20,000 empty system messages
  for (int i = 0; i < 2000; ++i)
    in.messages.push_back(trunc_msg(i % 2 ? "assistant" : "user", "abc"));
  in.messages.push_back(trunc_msg("user", "last"));
  const size_t full = render_untruncated(b, in.messages).size();
  const std::string out = b.render_chat(in, static_cast<uint32_t>(full / 2), counting).text;
  EXPECT_TRUE(out.ends_with("<user>last"));
  EXPECT_LT(out.size(), full);  // it did truncate
  // One try of everything, then a bisection of 22,001 positions.
  EXPECT_LE(renders, 2 + static_cast<size_t>(std::ceil(std::log2(in.messages.size()))));
}

}  // namespace
