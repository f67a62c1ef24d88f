// PromptBuilder: Ollama's message assembly, collation, execution modes, images, truncation and
// the parser configuration derived from templates (compat §5.2–§5.5, §6.4).
#include <gtest/gtest.h>

#include "server/prompt/prompt.h"

using namespace vkllm::prompt;
using ojson = nlohmann::ordered_json;

namespace {

Message msg(std::string role, std::string content) {
  return Message{std::move(role), std::move(content), "", {}, {}, "", ""};
}

PromptBuilder builder(const std::string& tmpl, std::string system = "") {
  ModelPrompt m;
  m.template_text = tmpl;
  m.system = std::move(system);
  return PromptBuilder(m);
}

const std::string kRoles = "{{ range .Messages }}<{{ .Role }}>{{ .Content }}{{ end }}";

std::string chat(const PromptBuilder& b, std::vector<Message> msgs) {
  ChatInput in;
  in.messages = std::move(msgs);
  return b.render_chat(in, 1 << 20, {}).text;
}

// A Qwen-3-like template: thinking inside the message range, tool calls behind <tool_call>.
const std::string kQwen =
    "{{- if .Tools }}<|im_start|>system\n# Tools\n{{ range .Tools }}{{ . }}\n{{ end "
    "}}<|im_end|>\n{{ end }}"
    "{{- range $i, $_ := .Messages }}"
    "{{- if eq .Role \"assistant\" }}<|im_start|>assistant\n"
    "{{- if .Thinking }}<think>{{ .Thinking }}</think>{{ end }}"
    "{{- if .Content }}{{ .Content }}{{ else if .ToolCalls }}<tool_call>\n"
    "{{ range .ToolCalls }}{\"name\": \"{{ .Function.Name }}\", \"arguments\": {{ "
    ".Function.Arguments }}}\n{{ end }}</tool_call>{{ end }}<|im_end|>\n"
    "{{- else }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}"
    "{{- end }}<|im_start|>assistant\n{{ if and .IsThinkSet (not .Think) "
    "}}<think>\n\n</think>\n\n{{ else if .Think }}<think>\n{{ end }}";

}  // namespace

TEST(PromptBuilder, CollatesSameRoleButNeverToolMessages) {
  auto b = builder(kRoles);
  EXPECT_EQ(chat(b, {msg("user", "a"), msg("user", "b"), msg("tool", "1"), msg("tool", "2"),
                     msg("assistant", "c")}),
            "<user>a\n\nb<tool>1<tool>2<assistant>c");
}

TEST(PromptBuilder, SystemHandling) {
  auto b = builder("{{ .System }}|" + kRoles, "model sys");
  EXPECT_EQ(chat(b, {msg("user", "hi")}), "model sys|<system>model sys<user>hi");
  // A leading request system message replaces the model's; a later one does not.
  EXPECT_EQ(chat(b, {msg("system", "req"), msg("user", "hi")}), "req|<system>req<user>hi");
  EXPECT_EQ(chat(b, {msg("user", "hi"), msg("system", "late")}),
            "model sys\n\nlate|<system>model sys<user>hi<system>late");
  // .Prompt and .Suffix are absent in messages mode.
  EXPECT_EQ(chat(builder("{{ .Prompt }}{{ .Suffix }}{{ .Messages | len }}"), {msg("user", "x")}),
            "<no value><no value>1");
}

TEST(PromptBuilder, LegacyModeRendersPerTurnAndCutsAfterResponse) {
  auto b = builder("{{ if .System }}S:{{ .System }} {{ end }}U:{{ .Prompt }} A:{{ .Response }}|");
  EXPECT_EQ(
      chat(b, {msg("system", "sys"), msg("user", "u1"), msg("assistant", "a1"), msg("user", "u2")}),
      "S:sys U:u1 A:a1|U:u2 A:");
  // {{ .Prompt }} gets {{ .Response }} appended: a trailing assistant message is a prefill.
  auto plain = builder("{{ .Prompt }}");
  EXPECT_EQ(chat(plain, {msg("user", "hi"), msg("assistant", "Hel")}), "hiHel");
  EXPECT_EQ(chat(plain, {msg("user", "a"), msg("assistant", "b"), msg("user", "c")}), "abc");
}

TEST(PromptBuilder, GenerateModes) {
  ModelPrompt m;
  m.template_text = "<PRE> {{ .Prompt }} <SUF>{{ .Suffix }} <MID>";
  PromptBuilder fim(m);
  EXPECT_TRUE(fim.capabilities().insert);
  GenerateInput g;
  g.prompt = "def f(";
  g.suffix = "return 1";
  EXPECT_EQ(fim.render_generate(g).text, "<PRE> def f( <SUF>return 1 <MID>");

  auto b = builder("{{ if .System }}[{{ .System }}]{{ end }}{{ .Prompt }}", "model sys");
  GenerateInput in;
  in.prompt = "hello";
  EXPECT_EQ(b.render_generate(in).text, "[model sys]hello");
  in.system = "req sys";
  EXPECT_EQ(b.render_generate(in).text, "[req sys]hello");
  in.template_override = "T:{{ .Prompt }}";
  EXPECT_EQ(b.render_generate(in).text, "T:hello");
  in.template_override = "{{ .Broken";
  EXPECT_THROW(b.render_generate(in), TemplateError);

  ModelPrompt hist;
  hist.template_text = kRoles;
  hist.messages = {msg("user", "old"), msg("assistant", "reply")};
  PromptBuilder h(hist);
  GenerateInput q;
  q.prompt = "new";
  EXPECT_EQ(h.render_generate(q).text, "<user>old<assistant>reply<user>new");
  q.has_context = true;
  EXPECT_EQ(h.render_generate(q).text, "<user>new");
}

TEST(PromptBuilder, GenerateTruncatesHistoryLikeChat) {
  ModelPrompt hist;
  hist.template_text = kRoles;
  hist.system = "S";
  hist.messages = {msg("user", "0123456789"), msg("assistant", "0123456789")};
  PromptBuilder h(hist);
  TokenCounter bytes = [](std::string_view s) { return s.size(); };
  GenerateInput q;
  q.prompt = "last";
  // 9 + 16 + 21 + 10 = 56 bytes in all.
  EXPECT_EQ(h.render_generate(q, 56, bytes).text,
            "<system>S<user>0123456789<assistant>0123456789<user>last");
  EXPECT_EQ(h.render_generate(q, 55, bytes).text, "<system>S<assistant>0123456789<user>last");
  EXPECT_EQ(h.render_generate(q, 1, bytes).text, "<system>S<user>last");
  q.truncate = false;
  EXPECT_EQ(h.render_generate(q, 1, bytes).text,
            "<system>S<user>0123456789<assistant>0123456789<user>last");
  EXPECT_EQ(h.render_generate(q).text, h.render_generate(q, 1, bytes).text);
}

TEST(PromptBuilder, ImagesBecomeNumberedTags) {
  auto b = builder(kRoles);
  ChatInput in;
  Message a = msg("user", "look");
  a.images = {"IMG0", "IMG1"};
  Message c = msg("user", "and [img] here");
  c.images = {"IMG2"};
  in.messages = {a, msg("assistant", "ok"), c};
  Rendered r = b.render_chat(in, 1 << 20, {});
  EXPECT_EQ(r.text, "<user>[img-0][img-1]look<assistant>ok<user>and [img-2] here");
  EXPECT_EQ(r.images, (std::vector<std::string>{"IMG0", "IMG1", "IMG2"}));
}

TEST(PromptBuilder, TruncationKeepsSystemAndLastMessage) {
  auto b = builder(kRoles);
  TokenCounter bytes = [](std::string_view s) { return s.size(); };
  ChatInput in;
  in.messages = {msg("system", "S"), msg("user", "0123456789"), msg("assistant", "0123456789"),
                 msg("user", "last")};
  // Everything: 9+16+21+10 = 56 bytes.
  EXPECT_EQ(b.render_chat(in, 56, bytes).text,
            "<system>S<user>0123456789<assistant>0123456789<user>last");
  // 55 drops the oldest non-system message; the system message moves in front of the tail.
  EXPECT_EQ(b.render_chat(in, 55, bytes).text, "<system>S<assistant>0123456789<user>last");
  // Nothing but the last fits: it is kept anyway.
  EXPECT_EQ(b.render_chat(in, 1, bytes).text, "<system>S<user>last");
  in.truncate = false;
  EXPECT_EQ(b.render_chat(in, 1, bytes).text,
            "<system>S<user>0123456789<assistant>0123456789<user>last");
}

TEST(PromptBuilder, ProjectorImagesCountTowardsTheContext) {
  ModelPrompt m;
  m.template_text = kRoles;
  m.has_projector = true;
  PromptBuilder b(m);
  TokenCounter bytes = [](std::string_view s) { return s.size(); };
  ChatInput in;
  Message img = msg("user", "pic");
  img.images = {"X"};
  in.messages = {img, msg("assistant", "a"), msg("user", "q")};
  EXPECT_EQ(b.render_chat(in, 1000, bytes).text, "<user>[img-0]pic<assistant>a<user>q");
  EXPECT_EQ(b.render_chat(in, 767, bytes).text, "<assistant>a<user>q");
}

TEST(PromptBuilder, Qwen3StripsEarlierThinking) {
  ModelPrompt m;
  m.template_text = kRoles;
  m.architecture = "qwen3";
  PromptBuilder q(m);
  std::vector<Message> msgs = {msg("user", "a"), msg("assistant", "  <think>hmm</think>\n\nanswer"),
                               msg("user", "b"), msg("assistant", "<think>keep</think>x")};
  EXPECT_EQ(chat(q, msgs), "<user>a<assistant>answer<user>b<assistant><think>keep</think>x");
  m.architecture = "llama";
  m.name = "library/deepseek-r1:8b";
  EXPECT_EQ(chat(PromptBuilder(m), msgs),
            "<user>a<assistant>answer<user>b<assistant><think>keep</think>x");
  m.name = "llama3.2";
  EXPECT_EQ(
      chat(PromptBuilder(m), msgs),
      "<user>a<assistant>  <think>hmm</think>\n\nanswer<user>b<assistant><think>keep</think>x");
}

TEST(PromptBuilder, ToolsThinkingAndParserConfig) {
  auto b = builder(kQwen);
  auto caps = b.capabilities();
  EXPECT_TRUE(caps.tools);
  EXPECT_TRUE(caps.thinking);
  EXPECT_FALSE(caps.insert);
  ojson tools =
      ojson::parse(R"([{"type":"function","function":{"name":"add","parameters":{"type":"object",
      "properties":{"a":{"type":"number"}}}}}])");
  ChatInput in;
  Message call = msg("assistant", "");
  call.tool_calls.push_back(ToolCall{"", 0, "add", ojson::parse(R"({"b":2,"a":1})")});
  Message result = msg("tool", "3");
  result.tool_name = "add";
  in.messages = {msg("user", "1+2?"), call, result};
  in.tools = tools;
  in.think = Think{true, true, "medium"};
  Rendered r = b.render_chat(in, 1 << 20, {});
  EXPECT_EQ(r.text,
            "<|im_start|>system\n# "
            "Tools\n{\"type\":\"function\",\"function\":{\"name\":\"add\",\"parameters\":"
            "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"}}}}}\n<|im_end|>\n"
            // ({{- trims the newline after "assistant" and after the assistant's <|im_end|>.)
            "<|im_start|>user\n1+2?<|im_end|>\n<|im_start|>assistant<tool_call>\n"
            "{\"name\": \"add\", \"arguments\": {\"a\":1,\"b\":2}}\n</tool_call><|im_end|>"
            "<|im_start|>tool\n3<|im_end|>\n<|im_start|>assistant\n<think>\n");
  ParserConfig c = b.parser_config(tools, in.think, r.text);
  EXPECT_EQ(c.think_open, "<think>");
  EXPECT_EQ(c.think_close, "</think>");
  EXPECT_TRUE(c.thinking);
  EXPECT_TRUE(c.starts_in_thinking);
  EXPECT_EQ(c.tool_tag, "<tool_call>");
  EXPECT_EQ(c.tool_names, std::vector<std::string>{"add"});

  Think off{true, false, ""};
  ParserConfig c2 = b.parser_config(nullptr, off, "x");
  EXPECT_FALSE(c2.thinking);
  EXPECT_FALSE(c2.starts_in_thinking);
  EXPECT_TRUE(c2.tool_names.empty());
  in.think = off;
  EXPECT_TRUE(b.render_chat(in, 1 << 20, {})
                  .text.ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n"));

  // Without tool-call blocks the tag defaults to "{"; mistral-style tags are found too.
  EXPECT_EQ(builder(kRoles).parser_config(nullptr, {}, "").tool_tag, "{");
  auto mistral = builder(
      "{{ range .Messages }}{{ if .ToolCalls }} [TOOL_CALLS] {{ range .ToolCalls }}{}{{ end }}{{ "
      "end }}{{ end }}");
  EXPECT_EQ(mistral.parser_config(nullptr, {}, "").tool_tag, "[TOOL_CALLS]");
  EXPECT_FALSE(builder(kRoles).capabilities().thinking);
}

TEST(PromptBuilder, TemplateErrors) {
  EXPECT_FALSE(check_template("{{ .Prompt }}"));
  auto e = check_template("hello\n{{ if .Prompt }}");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->rfind("template: :", 0), 0u);
  EXPECT_THROW(builder("{{ .Unclosed"), TemplateError);
  // Execution errors surface as TemplateError from render.
  auto bad = builder("{{ range .Messages }}{{ .Nope }}{{ end }}");
  EXPECT_THROW(chat(bad, {msg("user", "x")}), TemplateError);
}
