// Ollama's built-in parsers "gemma4", "lfm2"/"lfm2-thinking" and "ministral" through
// OutputParser: thinking, content and tool calls, the same whether the text comes whole, token by
// token, byte by byte or cut at random. The cases are those of Ollama's parser tests
// (model/parsers/gemma4_test.go, lfm2_test.go, ministral_test.go) with the results they state,
// except where vkllm keeps as content what Ollama drops or fails on (said at each such case).
#include <gtest/gtest.h>

#include "output_parser_test_util.h"
#include "server/prompt/gemma4_tool_args.h"

using namespace vkllm::prompt;
using namespace vkllm::prompt::testing;
using ojson = nlohmann::ordered_json;

namespace {

// A tool whose parameters are all strings (Ollama's gemma4TestStringTool).
ojson string_tool(const std::string& name, std::vector<std::string> params) {
  ojson props = ojson::object();
  for (const auto& p : params) props[p] = {{"type", "string"}};
  return {
      {"type", "function"},
      {"function", {{"name", name}, {"parameters", {{"type", "object"}, {"properties", props}}}}}};
}

ParserConfig builtin(const std::string& parser, bool thinking, ojson tools = ojson::array()) {
  ParserConfig c;
  c.builtin_parser = parser;
  c.thinking = thinking;
  for (const auto& t : tools) c.tool_names.push_back(t["function"]["name"].get<std::string>());
  c.tools = std::move(tools);
  return c;
}

void check_builtin(const ParserConfig& config, std::string_view text, const Expected& want) {
  expect_result(run_whole(config, text), want);
  expect_streaming_matches(config, text);
}

ojson gemma4_args(std::string_view body, const ojson& tools = ojson::array()) {
  auto call = parse_gemma4_tool_call(body, tools);
  return call ? call->arguments : ojson("<none>");
}

}  // namespace

TEST(Gemma4Parser, ThinkingChannelAndContent) {
  const ParserConfig think = builtin("gemma4", true);
  check_builtin(think, "<|channel>thought\nLet me think about this...<channel|>The answer is 42.",
                {"The answer is 42.", "Let me think about this...", {}});
  check_builtin(think,
                "<|channel>first thought<channel|><|channel>second thought<channel|>Final answer.",
                {"Final answer.", "first thoughtsecond thought", {}});
  check_builtin(think, "<|channel>thought\nplan\n<channel|>\n\n  Answer.  ",
                {"Answer.  ", "plan", {}});
  // Without thinking the channel's text is dropped, not shown.
  check_builtin(builtin("gemma4", false), "<|channel>this is not thinking<channel|>actual content",
                {"actual content", "", {}});
  // After tool results the prompt opened the channel: the output starts as thinking.
  ParserConfig after = think;
  after.after_tool_result = true;
  check_builtin(after, "The file lists two names.<channel|>There are two files.",
                {"There are two files.", "The file lists two names.", {}});
}

TEST(Gemma4Parser, ToolCallsWithTypedArguments) {
  const ojson tools = ojson::array({string_tool("get_weather", {"location"})});
  check_builtin(
      builtin("gemma4", true, tools),
      "<|channel>thought\nI need to check the weather<channel|><|tool_call>call:get_weather{"
      "location:<|\"|>Paris<|\"|>}<tool_call|><|tool_call>call:get_weather{location:<|\"|>London"
      "<|\"|>}<tool_call|>",
      {"",
       "I need to check the weather",
       {{"get_weather", R"({"location":"Paris"})"}, {"get_weather", R"({"location":"London"})"}}});
  check_builtin(
      builtin("gemma4", false),
      "Let me check.\n<|tool_call>call:process{config:{enabled:true,name:<|\"|>test<|\"|>},"
      "n:5,ratio:0.5,none:null,tags:[<|\"|>a<|\"|>,<|\"|>b<|\"|>]}<tool_call|>",
      {"Let me check.",
       "",
       {{"process",
         R"({"config":{"enabled":true,"name":"test"},"n":5,"ratio":0.5,"none":null,"tags":["a","b"]})"}}});
  // Stray <tool_call|> and <|tool_response> markers after a call are dropped.
  check_builtin(builtin("gemma4", false),
                "<|tool_call>call:f{}<tool_call|><tool_call|>\n<|tool_response>Done.",
                {"Done.", "", {{"f", "{}"}}});
  // A call cut off by the end of the output is still read (the model stopped before its close).
  check_builtin(builtin("gemma4", false),
                "<|tool_call>call:search{query:<|\"|>say \"hello\" and \"bye\"<|\"|>}",
                {"", "", {{"search", R"({"query":"say \"hello\" and \"bye\""})"}}});
  // One that cannot be read stays content (Ollama drops it).
  check_builtin(builtin("gemma4", false), "<|tool_call>call:f{a:b c}<tool_call|>",
                {"<|tool_call>call:f{a:b c}<tool_call|>", "", {}});
}

TEST(Gemma4Parser, ArgumentNotation) {
  // Quoted scalars stay strings; bare ones keep their JSON types; text inside <|"|> is verbatim.
  EXPECT_EQ(gemma4_args(R"(call:foo{n:<|"|>1<|"|>,b:<|"|>true<|"|>,z:<|"|>null<|"|>})").dump(),
            R"({"n":"1","b":"true","z":"null"})");
  EXPECT_EQ(gemma4_args("call:foo{n:1,b:true,z:null}").dump(), R"({"n":1,"b":true,"z":null})");
  EXPECT_EQ(gemma4_args(R"(call:open_file{path:<|"|>C:\users\bob\file.txt<|"|>})")["path"],
            R"(C:\users\bob\file.txt)");
  EXPECT_EQ(gemma4_args(R"(call:s{query:"raw \"quoted\"",note:<|"|>gemma "quoted"<|"|>})").dump(),
            R"({"query":"raw \"quoted\"","note":"gemma \"quoted\""})");
  EXPECT_EQ(gemma4_args(R"(call:foo{q:"a,b:c"})").dump(), R"({"q":"a,b:c"})");
  EXPECT_EQ(gemma4_args("call:f{ config:{\n enabled:true}}").dump(),
            R"({"config":{"enabled":true}})");
  // A JSON string with an invalid escape is not an argument object.
  EXPECT_EQ(gemma4_args(R"(call:open_file{path:"C:\users\bob\file.txt"})"), "<none>");
}

TEST(Gemma4Parser, OllamasRepairs) {
  // Issue 15315's examples: a raw multi-line string for a string property, a single-quoted value
  // with a dangling delimiter, an unclosed Gemma string before the object's close.
  const std::string md = "\n\n# Style Guide\n\nUse `src/` and 'quotes'.";
  EXPECT_EQ(
      gemma4_args("call:write{content:" + md, ojson::array({string_tool("write", {"content"})}))
          .dump(),
      ojson({{"content", md}}).dump());
  EXPECT_EQ(gemma4_args(R"(call:grep{include:<|"|>*.py<|"|>,pattern:':\s*\w+'<|"|>})",
                        ojson::array({string_tool("grep", {"include", "pattern"})}))
                .dump(),
            R"({"include":"*.py","pattern":":\\s*\\w+"})");
  EXPECT_EQ(gemma4_args(R"(call:bash{command:<|"|>ls})").dump(), R"({"command":"ls"})");
  EXPECT_EQ(gemma4_args(R"(call:write{content:hello,mode:<|"|>fast<|"|>})",
                        ojson::array({string_tool("write", {"content", "mode"})}))
                .dump(),
            R"({"content":"hello","mode":"fast"})");
  // The raw-string repair needs the schema to say string.
  EXPECT_EQ(gemma4_args("call:write{content:hello"), "<none>");
  EXPECT_EQ(gemma4_args(R"(call:example{first:<|"|>one,second:<|"|>two<|"|>})",
                        ojson::array({string_tool("example", {"first", "second"})})),
            "<none>");
}

TEST(Lfm2Parser, ThinkingIsOptionalPerAnswer) {
  const ParserConfig think = builtin("lfm2-thinking", true);
  check_builtin(think, "<think>Let me think:\n- Point 1\n- Point 2</think>\n\nHere's my answer.",
                {"Here's my answer.", "Let me think:\n- Point 1\n- Point 2", {}});
  check_builtin(think, "  The answer is 42.", {"The answer is 42.", "", {}});  // a direct answer
  check_builtin(think, "<think>Just thinking content</think>", {"", "Just thinking content", {}});
  // Unfinished thinking keeps what came (trailing whitespace dropped, as Ollama never sends it).
  check_builtin(think, "<think>Still thinking </thi", {"", "Still thinking </thi", {}});
  // Without thinking, tags are content.
  check_builtin(builtin("lfm2", false), "<think>x</think>y", {"<think>x</think>y", "", {}});
}

TEST(Lfm2Parser, PythonStyleToolCalls) {
  const ParserConfig p = builtin("lfm2", false);
  check_builtin(
      p,
      "Getting weather for both cities.<|tool_call_start|>[get_weather(location=\"Paris\")]"
      "<|tool_call_end|><|tool_call_start|>[get_weather(location=\"London\")]<|tool_call_end|>",
      {"Getting weather for both cities.",
       "",
       {{"get_weather", R"({"location":"Paris"})"}, {"get_weather", R"({"location":"London"})"}}});
  check_builtin(
      p,
      "Processing data.<|tool_call_start|>[process_data(items=['item1','item2'], "
      "config={'enabled': True, 'threshold': 0.95}), ping(), process(name=\"test\", count=42, "
      "enabled=true, x=None, r=-1.5, s=raw text)]<|tool_call_end|>\nDone.",
      {"Processing data.Done.",  // whitespace after the calls goes
       "",
       {{"process_data",
         R"({"items":["item1","item2"],"config":{"enabled":true,"threshold":0.95}})"},
        {"ping", "{}"},
        {"process",
         R"({"name":"test","count":42,"enabled":true,"x":null,"r":-1.5,"s":"raw text"})"}}});
  check_builtin(builtin("lfm2-thinking", true),
                "<think>Let me run this command...</think><|tool_call_start|>[bash(command='ls')]"
                "<|tool_call_end|>",
                {"", "Let me run this command...", {{"bash", R"({"command":"ls"})"}}});
  // A list that is not calls stays content (Ollama's parser stops there).
  check_builtin(p, "A<|tool_call_start|>not a call<|tool_call_end|> B",
                {"A<|tool_call_start|>not a call<|tool_call_end|> B", "", {}});
}

TEST(Lfm2Parser, BareCallsWithToolsOffered) {
  // Models that forget the wrapper tags: a whole answer of calls to offered tools is the calls.
  const ojson tools = ojson::array({string_tool("bash", {"command"})});
  check_builtin(builtin("lfm2", false, tools), "  [bash(command='ls'), bash(command='pwd')]\n",
                {"", "", {{"bash", R"({"command":"ls"})"}, {"bash", R"({"command":"pwd"})"}}});
  check_builtin(builtin("lfm2", false, tools), "bash(command='ls') and more text",
                {"bash(command='ls') and more text", "", {}});
  check_builtin(builtin("lfm2", false, tools), "[other(x=1)]", {"[other(x=1)]", "", {}});
  check_builtin(builtin("lfm2", false), "[bash(command='ls')]", {"[bash(command='ls')]", "", {}});
}

TEST(MinistralParser, ToolCallsAndThinking) {
  const ojson tools =
      ojson::array({string_tool("get_weather", {"location"}), string_tool("f", {})});
  const ParserConfig p = builtin("ministral", false, tools);
  check_builtin(
      p,
      R"(content [TOOL_CALLS]get_weather[ARGS]{"location": "San Francisco"}[TOOL_CALLS]f[ARGS]{"a": {"b": [1, "}"]}}after)",
      {"contentafter",
       "",
       {{"get_weather", R"({"location":"San Francisco"})"}, {"f", R"({"a":{"b":[1,"}"]}})"}}});
  // [THINK] is thinking even though the parser does not claim the capability (Ollama's too).
  check_builtin(p, "[THINK]Let me see. [/THINK]\n\nThe answer.\n",
                {"The answer.", "Let me see. ", {}});
  check_builtin(p, "abc[TOOL not a tag", {"abc[TOOL not a tag", "", {}});
  // Where Ollama fails the request: an unknown tool or arguments that are not an object stay
  // content; so does a call cut off by the end of the output.
  check_builtin(p, R"([TOOL_CALLS]missing[ARGS]{"x": 1})",
                {R"([TOOL_CALLS]missing[ARGS]{"x": 1})", "", {}});
  check_builtin(p, R"([TOOL_CALLS]f[ARGS]["x"])", {R"([TOOL_CALLS]f[ARGS]["x"])", "", {}});
  check_builtin(p, R"(Hi [TOOL_CALLS]f[ARGS]{"x": )", {R"(Hi[TOOL_CALLS]f[ARGS]{"x": )", "", {}});
}
