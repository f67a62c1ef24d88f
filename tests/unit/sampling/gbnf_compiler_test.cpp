// GBNF grammars (llama.cpp's `grammar` field) at the byte level: which outputs each grammar
// accepts whole, and the 400 texts that name what is not supported or wrong.
#include "engine/sampling/gbnf_compiler.h"

#include <gtest/gtest.h>

#include <string>

#include "engine/sampling/grammar_matcher.h"
#include "engine/sampling/token_constraint.h"

namespace vkllm::sampling {
namespace {

bool accepts(const grammar::Grammar& g, std::string_view text) {
  grammar::Matcher m(g);
  return m.advance(text) && m.complete();
}

std::string error_of(std::string_view text) {
  try {
    compile_gbnf(text);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "(compiled)";
}

TEST(Gbnf, LiteralsClassesGroupsAndRepetitions) {
  const auto g = compile_gbnf(R"(# a comment
root ::= greeting " " name ("!" | "?"){1,3}   # trailing comment
greeting ::= "hi" | "hello"
name ::= [A-Z] [a-z]* ( "-" [A-Z] [a-z]+ )?
)");
  for (const char* ok : {"hi Bob!", "hello Al!!?", "hi X?", "hi Jean-Luc!"}) {
    EXPECT_TRUE(accepts(g, ok)) << ok;
  }
  for (const char* bad : {"hi bob!", "hey Bob!", "hi Bob", "hi Bob!!!!", "hi Jean-!", " hi Bob!"}) {
    EXPECT_FALSE(accepts(g, bad)) << bad;
  }
}

TEST(Gbnf, RulesSpanLinesInsideParenthesesAndAfterBars) {
  // The shape of llama.cpp's grammars/json.gbnf (written anew): nested, recursive, multi-line.
  const auto g = compile_gbnf(R"(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
ws ::= | " " | "\n" [ \t]{0,20}
)");
  for (const char* ok : {"{}", R"({"a": [1, -2.5, "x\u00e9", true, null, {}]})",
                         "{\"k\":\n  \"\xc3\xa9\xe2\x82\xac\"} "}) {
    EXPECT_TRUE(accepts(g, ok)) << ok;
  }
  for (const char* bad : {"[1]", "{\"a\":}", "{\"a\":1,}", "{\"\x01\":1}", "{}\n\n"}) {
    EXPECT_FALSE(accepts(g, bad)) << bad;
  }
}

TEST(Gbnf, UnicodeClassesDotAndEscapes) {
  const auto g = compile_gbnf(R"(root ::= [\u4e00-\u9fff]+ "\x21" . "\U0001F600" [^a-z]
)");
  EXPECT_TRUE(accepts(g, "\xe4\xb8\xad\xe6\x96\x87!\xc3\xa9\xf0\x9f\x98\x80Z"));
  EXPECT_TRUE(accepts(g, "\xe4\xb8\x80!x\xf0\x9f\x98\x80\xf0\x9f\x98\x81"));
  EXPECT_FALSE(accepts(g, "abc!x\xf0\x9f\x98\x80Z"));
  EXPECT_FALSE(accepts(g, "\xe4\xb8\x80!x\xf0\x9f\x98\x80q"));
  EXPECT_FALSE(accepts(g, "\xe4\xb8\x80!\xed\xa0\x80\xf0\x9f\x98\x80Z"));  // a surrogate
}

TEST(Gbnf, RulesThatMatchNothingAreOptionalWhereUsed) {
  const auto g = compile_gbnf(R"(root ::= sign digits frac
sign ::= "-"?
digits ::= [0-9]+
frac ::= ("." [0-9]+)?
empty ::= ""
)");
  for (const char* ok : {"1", "-1", "1.5", "-0.25"}) EXPECT_TRUE(accepts(g, ok)) << ok;
  for (const char* bad : {"", "-", "1.", ".5"}) EXPECT_FALSE(accepts(g, bad)) << bad;
  // A root that may be empty still needs a character: the model writes something.
  const auto star = compile_gbnf("root ::= [a-z]*\n");
  EXPECT_TRUE(accepts(star, "abc"));
  EXPECT_FALSE(accepts(star, ""));
}

TEST(Gbnf, ErrorsNameTheConstructAndWhere) {
  const std::string prefix = "invalid grammar: ";
  auto expect_error = [&](std::string_view text, const std::string& want) {
    const std::string err = error_of(text);
    EXPECT_EQ(err.rfind(prefix, 0), 0u) << err;
    EXPECT_NE(err.find(want), std::string::npos) << text << " -> " << err;
  };
  expect_error("root ::= <[1000]> \"x\"\n", "token references (<...>) are not supported at 1:10");
  expect_error("root ::= !<think>\n", "token references");
  expect_error("root ::= a\n", "rule \"a\" is not defined at 1:10");
  expect_error("a ::= \"x\"\n", "no rule \"root\"");
  expect_error("root ::= \"x\"\nroot ::= \"y\"\n", "rule \"root\" is defined twice at 2:1");
  expect_error("root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"\n", "left recursion");
  expect_error("root ::= \"abc\n", "unterminated literal at 1:10");
  expect_error("root ::= [a-z\n", "unterminated character class");
  expect_error("root ::= \"a\"{2,1}\n", "{m,n} with n < m");
  expect_error("root ::= \"a\"{5000}\n", "repetition counts above 1000");
  expect_error("root ::= \"a\"**\n", "a repetition of a repetition needs parentheses");
  expect_error("root ::= (\"a\"\n", "expected ')'");
  expect_error("root = \"a\"\n", "expected ::= after \"root\"");
  expect_error("root ::= \"\\q\"\n", "unknown escape \\q");
  expect_error("root ::= " + std::string(200, '(') + "\"a\"" + std::string(200, ')') + "\n",
               "parentheses nested more than 100 deep");
}

TEST(Gbnf, WorkBudgetNamesTheRule) {
  // Few states, much work: every split of up to 290 characters between the three runs.
  const std::string err =
      error_of("root ::= big\nbig ::= [^\\n]{0,100} [^\\n]{0,100} [^\\n]{0,90}\n");
  EXPECT_NE(err.find("invalid grammar: rule \"big\" is too complex to compile"), std::string::npos)
      << err;
}

}  // namespace
}  // namespace vkllm::sampling
