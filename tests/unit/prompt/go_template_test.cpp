// The template language against Go's text/template semantics; every expected output is what
// Go 1.22+ prints for the same template and data (missingkey=zero, Ollama's functions).
#include <gtest/gtest.h>

#include "server/prompt/go_template.h"
#include "server/prompt/template_data.h"

using namespace vkllm::prompt;
using ojson = nlohmann::ordered_json;

namespace {

Value data() {
  return Value::map(
      {{"A", Value::string("x")},
       {"N", Value::integer(2)},
       {"F", Value::floating(1.5)},
       {"L", Value::list({Value::string("a"), Value::string("b"), Value::string("c")})},
       {"E", Value::list({})},
       {"M", Value::map({{"b", Value::integer(2)}, {"a", Value::integer(1)}})},
       {"Nil", Value()},
       {"T", Value::boolean(true)}});
}

std::string render(const std::string& t, const Value& d = data(), ExecLimits lim = {}) {
  return GoTemplate::parse(t).execute(d, lim);
}

std::string error_of(const std::string& t, const Value& d = data(), ExecLimits lim = {}) {
  try {
    GoTemplate::parse(t).execute(d, lim);
  } catch (const TemplateError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST(GoTemplate, TextAndTrimming) {
  EXPECT_EQ(render("hello"), "hello");
  EXPECT_EQ(render("a  {{- .A -}}  b"), "axb");
  EXPECT_EQ(render("a {{ .A }} b"), "a x b");
  EXPECT_EQ(render("x\n\t{{- .A }}\n"), "xx\n");
  EXPECT_EQ(render("{{ .A -}}\n\n  y"), "xy");
  EXPECT_EQ(render("a{{/* note */}}b"), "ab");
  EXPECT_EQ(render("a \n{{- /* note */ -}}\n b"), "ab");
  EXPECT_EQ(render("{{-3}}"), "-3");  // a dash without a space is a number
  EXPECT_EQ(render("{{ \"a\\tb\\u00e9\" }}{{ `r\\n` }}"), "a\tb\xC3\xA9r\\n");
}

TEST(GoTemplate, FieldsMissingKeysAndNil) {
  EXPECT_EQ(render("{{ .A }}"), "x");
  EXPECT_EQ(render("{{ .Missing }}"), "<no value>");
  EXPECT_EQ(render("{{ .Nil }}"), "<no value>");
  EXPECT_EQ(render("{{ print .Missing }}"), "<nil>");
  EXPECT_EQ(render("{{ printf \"%v\" .Missing }}"), "<nil>");
  EXPECT_EQ(render("{{ if .Missing }}y{{ else }}n{{ end }}"), "n");
  EXPECT_EQ(render("{{ $.A }}{{ range .L }}{{ $.A }}{{ end }}"), "xxxx");
  EXPECT_EQ(render("{{ .M.a }}"), "1");
  EXPECT_NE(error_of("{{ .Missing.X }}").find("nil pointer evaluating interface {}.X"),
            std::string::npos);
  EXPECT_NE(error_of("{{ .A.X }}").find("can't evaluate field X in type string"),
            std::string::npos);
  Message m{"user", "hi", "", {}, {}, "", ""};
  EXPECT_EQ(render("{{ .Role }}:{{ .Content }}", message_value(m)), "user:hi");
  EXPECT_NE(error_of("{{ .Nope }}", message_value(m))
                .find("can't evaluate field Nope in type api.Message"),
            std::string::npos);
}

TEST(GoTemplate, PrintingValues) {
  EXPECT_EQ(render("{{ .L }}"), "[a b c]");
  EXPECT_EQ(render("{{ .M }}"), "map[a:1 b:2]");
  EXPECT_EQ(render("{{ .E }}"), "[]");
  EXPECT_EQ(render("{{ .T }} {{ .N }} {{ .F }}"), "true 2 1.5");
  auto f = [](double d) { return render("{{ .X }}", Value::map({{"X", Value::floating(d)}})); };
  EXPECT_EQ(f(1e6), "1e+06");
  EXPECT_EQ(f(123456), "123456");
  EXPECT_EQ(f(1234567), "1.234567e+06");
  EXPECT_EQ(f(0.0001), "0.0001");
  EXPECT_EQ(f(0.00001), "1e-05");
  EXPECT_EQ(f(3), "3");
  EXPECT_EQ(f(-2.5), "-2.5");
  EXPECT_EQ(f(0.1), "0.1");
  EXPECT_EQ(render("{{ 1.0 }} {{ 3 }} {{ 0x10 }} {{ 'a' }} {{ 1e3 }} {{ 1_000 }}"),
            "1 3 16 97 1000 1000");
  EXPECT_EQ(render("{{ print (slice .L 0 1) .Nil }}"), "[a] <nil>");
  EXPECT_EQ(render("{{ json .M }}"), "{\"a\":1,\"b\":2}");
  Value j = json_to_value(ojson::parse(R"({"b":[1,"<x>&",2.5e-7,1e21],"a":null})"));
  EXPECT_EQ(render("{{ json . }}", j), R"({"a":null,"b":[1,"\u003cx\u003e\u0026",2.5e-7,1e+21]})");
}

TEST(GoTemplate, VariablesAndScoping) {
  EXPECT_EQ(render("{{ $x := 1 }}{{ $x }}"), "1");
  EXPECT_EQ(
      render("{{ $s := \"\" }}{{ range .L }}{{ $s = printf \"%s%s\" $s . }}{{ end }}{{ $s }}"),
      "abc");
  EXPECT_EQ(render("{{ $x := 1 }}{{ if true }}{{ $x := 2 }}{{ $x }}{{ end }}{{ $x }}"), "21");
  EXPECT_EQ(render("{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ end }}{{ $x }}"), "2");
  EXPECT_NE(
      error_of("{{ if true }}{{ $y := 2 }}{{ end }}{{ $y }}").find("undefined variable \"$y\""),
      std::string::npos);
  EXPECT_EQ(render("{{ $x := .Missing }}{{ $x.Field }}"), "<no value>");
}

TEST(GoTemplate, Conditionals) {
  std::string t = "{{ if eq .N 1 }}one{{ else if eq .N 2 }}two{{ else }}other{{ end }}";
  EXPECT_EQ(render(t), "two");
  EXPECT_EQ(render("{{ if .E }}y{{ else }}n{{ end }}{{ if .M }}y{{ end }}{{ if 0 }}y{{ end }}{{ if "
                   "\"\" }}y{{ end }}"),
            "ny");
  EXPECT_EQ(render("{{ with .A }}[{{ . }}]{{ else }}none{{ end }}"), "[x]");
  EXPECT_EQ(render("{{ with .Missing }}a{{ else with .A }}{{ . }}{{ end }}"), "x");
  EXPECT_EQ(render("{{ with .E }}a{{ else }}b{{ end }}"), "b");
}

TEST(GoTemplate, Range) {
  EXPECT_EQ(render("{{ range $i, $v := .L }}{{ $i }}={{ $v }};{{ end }}"), "0=a;1=b;2=c;");
  EXPECT_EQ(render("{{ range $k, $v := .M }}{{ $k }}:{{ $v }} {{ end }}"), "a:1 b:2 ");
  EXPECT_EQ(render("{{ range .E }}x{{ else }}empty{{ end }}"), "empty");
  EXPECT_EQ(render("{{ range .Missing }}x{{ else }}none{{ end }}"), "none");
  EXPECT_EQ(render("{{ range .L }}{{ if eq . \"b\" }}{{ break }}{{ end }}{{ . }}{{ end }}"), "a");
  EXPECT_EQ(render("{{ range .L }}{{ if eq . \"b\" }}{{ continue }}{{ end }}{{ . }}{{ end }}"),
            "ac");
  EXPECT_EQ(render("{{ range 3 }}{{ . }}{{ end }}"), "012");
  EXPECT_EQ(render("{{ $i := 9 }}{{ range $i = .L }}{{ end }}{{ $i }}"), "c");
  EXPECT_NE(error_of("{{ break }}").find("{{break}} outside {{range}}"), std::string::npos);
  EXPECT_NE(error_of("{{ range .A }}{{ end }}").find("range can't iterate over x"),
            std::string::npos);
}

TEST(GoTemplate, Builtins) {
  EXPECT_EQ(render("{{ or \"\" \"x\" }}|{{ and 1 0 }}|{{ and 1 2 }}|{{ or 0 \"\" }}|"), "x|0|2||");
  EXPECT_EQ(render("{{ or 1 .Missing.Field }}{{ and 0 (index .L 99) }}"), "10");  // short-circuit
  EXPECT_EQ(render("{{ not \"\" }} {{ not .L }}"), "true false");
  EXPECT_EQ(render("{{ eq \"b\" \"a\" \"b\" }} {{ ne 1 2 }} {{ lt 1 2 }} {{ le 2 2 }} {{ gt \"b\" "
                   "\"a\" }} {{ ge 1.5 2.5 }}"),
            "true true true true true false");
  EXPECT_NE(error_of("{{ eq 1 \"a\" }}").find("incompatible types for comparison"),
            std::string::npos);
  EXPECT_NE(error_of("{{ lt 1 2.0 }}").find("incompatible types for comparison"),
            std::string::npos);
  EXPECT_EQ(render("{{ eq .Missing \"a\" }}"), "false");
  EXPECT_EQ(render("{{ len .L }} {{ len \"h\xC3\xA9\" }} {{ len .M }}"), "3 3 2");
  EXPECT_EQ(
      render("{{ index .L 1 }} {{ index .M \"b\" }} {{ index .M \"zz\" }} {{ index \"abc\" 0 }}"),
      "b 2 <no value> 97");
  EXPECT_NE(error_of("{{ index .L 5 }}").find("index out of range: 5"), std::string::npos);
  EXPECT_EQ(render("{{ slice .L 1 }} {{ slice \"hello\" 1 3 }} {{ len (slice $.L 2) }}"),
            "[b c] el 1");
  EXPECT_EQ(render("{{ print 1 2 }}|{{ print \"a\" 1 2 \"b\" }}|{{ println \"a\" 1 }}"),
            "1 2|a1 2b|a 1\n");
  EXPECT_EQ(render("{{ html \"<a href='x'>&\" }}"), "&lt;a href=&#39;x&#39;&gt;&amp;");
  EXPECT_EQ(render("{{ js \"a'b\\\"<=\" }}"), "a\\'b\\\"\\u003C\\u003D");
  EXPECT_EQ(render("{{ urlquery \"a b&c\" }}"), "a+b%26c");
  EXPECT_EQ(render("{{ \"x\" | printf \"%s-%s\" \"y\" }}|{{ .L | len }}"), "y-x|3");
  EXPECT_EQ(render("{{ (index .L 0) }}{{ (.M).a }}"), "a1");
  EXPECT_NE(error_of("{{ (print .A).X }}").find("can't evaluate field X in type string"),
            std::string::npos);
}

TEST(GoTemplate, Printf) {
  EXPECT_EQ(render("{{ printf \"%s-%d-%v-%q\" \"x\" 3 true \"y\\n\" }}"), "x-3-true-\"y\\n\"");
  EXPECT_EQ(render("{{ printf \"%d\" \"x\" }}"), "%!d(string=x)");
  EXPECT_EQ(render("{{ printf \"%s\" }}"), "%!s(MISSING)");
  EXPECT_EQ(render("{{ printf \"%s\" \"a\" 1 }}"), "a%!(EXTRA int=1)");
  EXPECT_EQ(render("{{ printf \"%5.2f|%-4d|%04d|%6s|%-3s|\" 3.14159 7 42 \"ab\" \"c\" }}"),
            " 3.14|7   |0042|    ab|c  |");
  EXPECT_EQ(render("{{ printf \"%x %X %o %b %c %%\" 255 255 8 5 65 }}"), "ff FF 10 101 A %");
  EXPECT_EQ(render("{{ printf \"%v %s\" .L .M }}"), "[a b c] map[a:%!s(int=1) b:%!s(int=2)]");
  EXPECT_EQ(render("{{ printf \"%v|%g|%e|%.3g\" 1e6 0.5 1234.5 1234.5 }}"),
            "1e+06|0.5|1.234500e+03|1.23e+03");
  EXPECT_EQ(render("{{ printf \"%s\" .Nil }}"), "%!s(<nil>)");
  EXPECT_EQ(render("{{ printf \"%z\" 1 }}"), "%!z(int=1)");
  EXPECT_EQ(render("{{ printf \"%.2s|%t\" \"h\xC3\xA9llo\" false }}"), "h\xC3\xA9|false");
}

TEST(GoTemplate, DefineTemplateBlock) {
  EXPECT_EQ(
      render("{{ define \"t\" }}[{{ . }}]{{ end }}{{ template \"t\" \"x\" }}{{ template \"t\" }}"),
      "[x][<no value>]");
  EXPECT_EQ(render("{{ block \"b\" .A }}<{{ . }}>{{ end }}"), "<x>");
  EXPECT_NE(error_of("{{ template \"nope\" }}").find("no such template"), std::string::npos);
  // Unbounded recursion is an error, not a crash.
  EXPECT_NE(error_of("{{ define \"r\" }}{{ template \"r\" . }}{{ end }}{{ template \"r\" 1 }}")
                .find("exceeded maximum template depth"),
            std::string::npos);
}

TEST(GoTemplate, ErrorsCarryLineAndColumn) {
  EXPECT_EQ(error_of("a\n{{ .X").rfind("template: :2:", 0), 0u) << error_of("a\n{{ .X");
  EXPECT_NE(error_of("a\n{{ .X").find("unclosed action"), std::string::npos);
  EXPECT_EQ(error_of("x\ny {{ foo }}"), "template: :2:5: function \"foo\" not defined");
  EXPECT_NE(error_of("{{ if .A }}"), "<no error>");
  EXPECT_NE(error_of("{{ end }}").find("unexpected {{end}}"), std::string::npos);
  EXPECT_NE(error_of("{{ else }}").find("unexpected {{else}}"), std::string::npos);
  EXPECT_NE(error_of("{{ .A | 3 }}").find("non executable command"), std::string::npos);
  EXPECT_NE(error_of("{{ \"unterminated }}").find("unterminated quoted string"), std::string::npos);
  EXPECT_NE(error_of("{{/* c */ x}}").find("comment ends before closing delimiter"),
            std::string::npos);
  EXPECT_NE(error_of("{{ 1 1 }}").find("can't give argument to non-function"), std::string::npos);
  EXPECT_EQ(error_of("line1\n  {{ len 3 }}"),
            "template: :2:5: executing \"\" at <len>: error calling len: len of type int");
  EXPECT_NE(error_of("{{ 99999999999999999999 }}").find("overflows int"), std::string::npos);
}

TEST(GoTemplate, HostileTemplatesAreBounded) {
  ExecLimits small;
  small.max_steps = 1000;
  EXPECT_NE(error_of("{{ range 100000000 }}{{ end }}", data(), small).find("step limit"),
            std::string::npos);
  ExecLimits one_mb;
  one_mb.max_output = 1 << 20;
  EXPECT_NE(error_of("{{ $x := \"ab\" }}{{ range 100 }}{{ $x = printf \"%s%s\" $x $x }}{{ end }}",
                     data(), one_mb)
                .find("size limit"),
            std::string::npos);
  std::string deep_if;
  for (int i = 0; i < 5000; ++i) deep_if += "{{ if 1 }}";
  EXPECT_NE(error_of(deep_if).find("nesting too deep"), std::string::npos);
  std::string parens = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  EXPECT_NE(error_of(parens).find("nesting too deep"), std::string::npos);
  EXPECT_EQ(render("{{ printf \"%9999999d\" 1 }}"), "%!(BADWIDTH)1");
}

TEST(GoTemplate, OllamaIdentifiersAndCut) {
  auto t =
      GoTemplate::parse("{{ if .System }}{{ .System }}{{ end }}{{ range $.Messages }}{{ end }}");
  auto ids = t.identifiers();
  EXPECT_TRUE(t.references("messages"));
  EXPECT_TRUE(t.references("system"));
  EXPECT_FALSE(t.references("response"));
  auto legacy = GoTemplate::parse("A{{ .Prompt }}B{{ .Response }}C{{ if .X }}D{{ end }}");
  Value v = Value::map({{"Prompt", Value::string("p")},
                        {"Response", Value::string("r")},
                        {"X", Value::boolean(true)}});
  EXPECT_EQ(legacy.execute(v), "ApBrCD");
  EXPECT_EQ(legacy.cut_after_response().execute(v), "ApBr");
  EXPECT_EQ(GoTemplate::parse("{{ .Prompt }}").with_response_appended().execute(v), "pr");
}

TEST(GoTemplate, OllamaFunctions) {
  ojson tools = ojson::parse(
      R"([{"type":"function","function":{"name":"get_weather","description":"Get <weather>",
    "parameters":{"type":"object","required":["city"],"properties":{"city":{"type":"string","description":"City"},
    "unit":{"type":["string","null"],"enum":["c","f"]},"days":{"type":"integer"},"tags":{"type":"array"},
    "opts":{"type":"object","extra":1},"any":{"anyOf":[{"type":"string"},{"type":"number"}]}}}}}])");
  Value root = Value::map({{"Tools", tools_value(tools)}});
  std::string fn =
      R"({"name":"get_weather","description":"Get \u003cweather\u003e","parameters":{"type":"object","required":["city"],)"
      R"("properties":{"city":{"type":"string","description":"City"},"unit":{"type":["string","null"],"enum":["c","f"]},)"
      R"("days":{"type":"integer"},"tags":{"type":"array"},"opts":{"type":"object"},"any":{"anyOf":[{"type":"string"},{"type":"number"}]}}}})";
  EXPECT_EQ(render("{{ .Tools }}", root), "[{\"type\":\"function\",\"function\":" + fn + "}]");
  EXPECT_EQ(render("{{ range .Tools }}{{ . }}{{ end }}", root),
            "{\"type\":\"function\",\"function\":" + fn + "}");
  EXPECT_EQ(render("{{ range .Tools }}{{ .Function }}{{ end }}", root), fn);
  EXPECT_EQ(render("{{ json .Tools }}", root), "[{\"type\":\"function\",\"function\":" + fn + "}]");
  EXPECT_EQ(
      render("{{ range .Tools }}{{ range $n, $p := .Function.Parameters.Properties }}{{ $n }}:{{ "
             "$p.Type }}={{ toTypeScriptType $p }};{{ end }}{{ end }}",
             root),
      "any:=string | number;city:string=string;days:integer=number;opts:object=Record<string, any>;"
      "tags:array=any[];unit:[string null]=string | null;");
  EXPECT_EQ(render("{{ toTypeScriptType .X }}", Value::map({{"X", Value::string("s")}})), "any");
  EXPECT_EQ(render("{{ .Tools }}", Value::map({{"Tools", tools_value(nullptr)}})), "null");
  EXPECT_EQ(
      render("{{ if .Tools }}y{{ else }}n{{ end }}", Value::map({{"Tools", tools_value(nullptr)}})),
      "n");

  Message m{"assistant", "", "", {}, {}, "", ""};
  m.tool_calls.push_back(
      ToolCall{"call_1", 0, "get_weather", ojson::parse(R"({"z":1,"a":"x <y>","n":2.5})")});
  Value mv = Value::map({{"Messages", Value::list({message_value(m)})}});
  EXPECT_EQ(render("{{ range .Messages }}{{ range .ToolCalls }}{{ .Function.Name }}{{ "
                   ".Function.Arguments }}{{ end }}{{ end }}",
                   mv),
            R"(get_weather{"a":"x \u003cy\u003e","n":2.5,"z":1})");
  EXPECT_EQ(render("{{ range .Messages }}{{ range .ToolCalls }}{{ range $k, $v := "
                   ".Function.Arguments }}{{ $k }}={{ $v }},{{ end }}{{ end }}{{ end }}",
                   mv),
            "a=x <y>,n=2.5,z=1,");
  std::string date = render("{{ currentDate }}");
  EXPECT_EQ(date.size(), 10u);
  EXPECT_EQ(date[4], '-');
  EXPECT_NE(render("{{ yesterdayDate }}"), date);
}
