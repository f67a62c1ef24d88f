// Forced tool calls in the syntaxes the server's parsers read (Harmony, Mistral, Qwen XML), and
// special tokens in formats: on a real vocabulary (Llama 3's BPE with Harmony's special tokens,
// as `vkllm dev make-vocab --kind harmony` writes it), a format that names <|channel|> allows
// exactly that token there, a text position allows no special token, byte tokens cannot spell
// one, and the cached masks agree with a token-by-token check.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/sampling/compiled_format.h"
#include "engine/sampling/grammar_matcher.h"
#include "engine/sampling/token_constraint.h"
#include "engine/sampling/tool_call_grammar.h"
#include "engine/sampling/vocabulary_index.h"
#include "engine/tokenizer/llama3_vocab.h"
#include "engine/tokenizer/tokenizer.h"

namespace vkllm::sampling {
namespace {

using json = nlohmann::ordered_json;
using Style = ToolCallSyntax::Style;

struct HarmonyVocab {
  std::vector<uint8_t> gguf;
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::shared_ptr<const VocabularyIndex> index;
};

const HarmonyVocab& harmony_vocab() {
  static const HarmonyVocab v = [] {
    HarmonyVocab h;
    const std::string dir = std::string(VKLLM_SHARED_DIR) + "/testdata/vocab/llama3.2/";
    h.gguf = tokenizer::build_llama3_vocab_gguf(dir + "encoder.json", dir + "vocab.bpe",
                                                tokenizer::Llama3Specials::kHarmony);
    h.tok = tokenizer::Tokenizer::from_gguf(gguf::GgufFile::parse(h.gguf));
    h.index = build_vocabulary_index(*h.tok);
    return h;
  }();
  return v;
}

ToolCallsSpec weather(Style style) {
  ToolCallsSpec s;
  s.syntax.style = style;
  s.tools.push_back({"get_weather", json::parse(R"({"type":"object","properties":{
      "city":{"type":"string","enum":["Paris","Oslo"]},"days":{"type":"integer"},
      "note":{"type":"string"}},"required":["city"]})")});
  s.tools.push_back({"now", json()});
  return s;
}

bool accepts(const ToolCallsSpec& spec, std::string_view text) {
  grammar::Matcher m(compile_format_spec(FormatSpec::of_tool_calls(spec))->grammar());
  return m.advance(text) && m.complete();
}

// The ids the constraint allows next, from its mask.
std::vector<int32_t> allowed(const TokenConstraint& c, int32_t vocab_size) {
  std::vector<float> logits(static_cast<size_t>(vocab_size), 0.0f);
  c.mask(logits);
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < vocab_size; ++id) {
    const bool on = logits[static_cast<size_t>(id)] != -std::numeric_limits<float>::infinity();
    EXPECT_EQ(on, c.allows(id)) << "mask and allows() disagree on " << id;
    if (on) ids.push_back(id);
  }
  return ids;
}

TEST(SpecialTokens, AFormatAllowsThemOnlyWhereItNamesThem) {
  const HarmonyVocab& v = harmony_vocab();
  const tokenizer::Tokenizer& tok = *v.tok;
  const int32_t n = tok.vocab_size();
  const int32_t channel = tok.vocab().find("<|channel|>");
  const int32_t call = tok.vocab().find("<|call|>");
  const int32_t ret = tok.vocab().find("<|return|>");
  ASSERT_GE(channel, 0);
  ASSERT_TRUE(tok.is_end_of_generation(call));

  ToolCallsSpec spec = weather(Style::harmony);
  spec.thinking_open = "<|channel|>analysis<|message|>";
  spec.thinking_close = "<|end|><|start|>assistant";
  spec.special_tokens = special_token_texts(tok, tool_call_literals(spec));
  // <|end|> is text in a Harmony vocabulary (the tokenizer makes it user-defined): not there.
  EXPECT_EQ(spec.special_tokens,
            (std::vector<std::string>{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>",
                                      "<|call|>"}));
  TokenConstraint c(compile_format_spec(FormatSpec::of_tool_calls(spec)), v.index);
  EXPECT_EQ(allowed(c, n), std::vector<int32_t>{channel});  // not "<", not "<|" spelt in text

  // The analysis text allows ordinary tokens and <|end|> (text), no special token.
  for (int32_t id : tok.encode("<|channel|>analysis<|message|>The user", false, true))
    ASSERT_TRUE(c.accept(id)) << id;
  const std::vector<int32_t> in_text = allowed(c, n);
  EXPECT_GT(in_text.size(), 100000u);
  for (int32_t id = 0; id < n; ++id) {
    if (tok.is_control(id) || tok.is_end_of_generation(id)) {
      EXPECT_FALSE(c.allows(id)) << id;
    }
  }
  EXPECT_TRUE(c.allows(tok.vocab().find("<|end|>")));

  const std::string rest =
      " wants weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather "
      "<|constrain|>json<|message|>{\"city\":\"Oslo\"}";
  for (int32_t id : tok.encode(rest, false, true)) ASSERT_TRUE(c.accept(id)) << id;
  EXPECT_FALSE(c.complete());
  EXPECT_EQ(allowed(c, n), std::vector<int32_t>{call});  // the call's own end, not <|return|>
  EXPECT_FALSE(c.allows(ret));
  ASSERT_TRUE(c.accept(call));
  EXPECT_TRUE(c.finished());

  // A plain JSON format never allows a special token, and no byte token can spell one.
  TokenConstraint j(compile_format_spec(FormatSpec::of_json("json")), v.index);
  for (int32_t id : tok.encode("{\"a\": \"", false, false)) ASSERT_TRUE(j.accept(id));
  for (int32_t id = 0; id < n; ++id) {
    const std::string_view bytes = v.index->bytes(id);
    const bool special = tok.is_control(id) || tok.is_end_of_generation(id);
    EXPECT_EQ(v.index->in_trie(id),
              special || (!bytes.empty() && bytes.find('\xff') == bytes.npos));
    if (special) {
      EXPECT_FALSE(j.allows(id)) << id;
    }
  }
}

TEST(SpecialTokens, WithoutTheTokensTheTagsAreText) {
  // A vocabulary without Harmony's tokens (a fixture forced to Harmony): the same texts, spelt.
  const std::string call = "<|channel|>commentary to=functions.now <|constrain|>json<|message|>{}";
  EXPECT_TRUE(accepts(weather(Style::harmony), call + "<|call|>"));
  EXPECT_FALSE(accepts(weather(Style::harmony), call));  // the call must end
  EXPECT_FALSE(accepts(weather(Style::harmony), call + "<|call|>" + call + "<|call|>"));
  auto thinking = weather(Style::harmony);
  thinking.thinking_open = "<|channel|>analysis<|message|>";
  thinking.thinking_close = "<|end|><|start|>assistant";
  EXPECT_TRUE(accepts(thinking, call + "<|call|>"));
  EXPECT_TRUE(accepts(
      thinking, "<|channel|>analysis<|message|>Hm <|end|><|start|>assistant" + call + "<|call|>"));
  EXPECT_FALSE(accepts(thinking, "<|channel|>final<|message|>Hi<|end|>"));
  // The same texts marked as special tokens are no longer text.
  thinking.special_tokens = {"<|channel|>", "<|call|>"};
  EXPECT_FALSE(accepts(thinking, call + "<|call|>"));
  const std::string ch = grammar::special_token_bytes("<|channel|>");
  EXPECT_TRUE(accepts(thinking, ch + "commentary to=functions.now <|constrain|>json<|message|>{}" +
                                    grammar::special_token_bytes("<|call|>")));
}

TEST(ToolSyntax, MistralNamesTheToolBeforeItsArguments) {
  auto spec = weather(Style::mistral);
  EXPECT_TRUE(accepts(spec, R"([TOOL_CALLS]get_weather[ARGS]{"city":"Paris","days":3})"));
  EXPECT_TRUE(
      accepts(spec, R"([TOOL_CALLS]now[ARGS]{}[TOOL_CALLS]get_weather[ARGS]{"city":"Oslo"})"));
  EXPECT_FALSE(accepts(spec, R"([TOOL_CALLS]get_weather[ARGS]{"city":"Rome"})"));
  EXPECT_FALSE(accepts(spec, R"([TOOL_CALLS]rm[ARGS]{})"));
  EXPECT_FALSE(accepts(spec, R"(Sure. [TOOL_CALLS]now[ARGS]{})"));
  spec.parallel = false;
  EXPECT_FALSE(accepts(spec, R"([TOOL_CALLS]now[ARGS]{}[TOOL_CALLS]now[ARGS]{})"));
  spec.thinking_open = "[THINK]";
  spec.thinking_close = "[/THINK]";
  EXPECT_TRUE(accepts(spec, R"([THINK]Call it.[/THINK][TOOL_CALLS]now[ARGS]{})"));
}

TEST(ToolSyntax, QwenXmlTypesParametersByTheSchema) {
  auto spec = weather(Style::qwen_xml);
  const std::string open =
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>";
  const std::string close = "\n</function>\n</tool_call>";
  EXPECT_TRUE(accepts(spec, open + close));
  EXPECT_TRUE(accepts(spec, open + "\n<parameter=days>\n4\n</parameter>" + close));
  EXPECT_TRUE(
      accepts(spec, open + "\n<parameter=note>\nif a < b: <b>warm</b>\n</parameter>" + close));
  EXPECT_TRUE(accepts(spec, "<tool_call>\n<function=now>" + close + "\n" + open + close));
  EXPECT_FALSE(accepts(spec, open + "\n<parameter=days>\nfour\n</parameter>" + close));
  EXPECT_FALSE(accepts(spec, "<tool_call>\n<function=get_weather>" + close));  // city required
  EXPECT_FALSE(accepts(spec, open.substr(0, open.size() - 18) + "Rome\n</parameter>" + close));
  // A string value cannot hold a tag the parser would cut it at.
  EXPECT_FALSE(accepts(spec, open + "\n<parameter=note>\na</tool_call>b\n</parameter>" + close));
  EXPECT_FALSE(accepts(spec, open + "\n<parameter=note>\na</parameter>b\n</parameter>" + close));
  // Parameters come in schema order.
  EXPECT_FALSE(accepts(spec,
                       "<tool_call>\n<function=get_weather>\n<parameter=days>\n4\n</parameter>"
                       "\n<parameter=city>\nParis\n</parameter>" +
                           close));
  spec.thinking_close = "</think>";  // Qwen 3.5: the prompt opened the think block
  EXPECT_TRUE(accepts(spec, "Let me call it.</think>\n\n" + open + close));
  EXPECT_FALSE(accepts(spec, open + close));
}

TEST(ToolSyntax, Gemma4WritesGemmasNotationWithSortedKeys) {
  auto spec = weather(Style::gemma4);
  const std::string q = "<|\"|>";
  EXPECT_TRUE(
      accepts(spec, "<|tool_call>call:get_weather{city:" + q + "Oslo" + q + "}<tool_call|>"));
  EXPECT_TRUE(accepts(spec, "<|tool_call>call:get_weather{city:" + q + "Oslo" + q +
                                ",days:2,note:" + q + "a \"b\" {c}" + q +
                                "}<tool_call|><|tool_call>call:now{}<tool_call|>"));
  EXPECT_FALSE(accepts(spec, "<|tool_call>call:get_weather{days:2}<tool_call|>"));  // city needed
  EXPECT_FALSE(accepts(spec, "<|tool_call>call:get_weather{days:2,city:" + q + "Oslo" + q +
                                 "}<tool_call|>"));  // keys sorted, as the renderer writes them
  EXPECT_FALSE(accepts(spec, "<|tool_call>call:get_weather{city:\"Oslo\"}<tool_call|>"));
  EXPECT_FALSE(
      accepts(spec, "<|tool_call>call:get_weather{city:" + q + "Rome" + q + "}<tool_call|>"));
  spec.tools.push_back({"tag", json::parse(R"({"type":"object","properties":{
      "labels":{"type":"array"}},"required":["labels"]})")});
  EXPECT_TRUE(
      accepts(spec, "<|tool_call>call:tag{labels:[" + q + "x" + q + ",{k:1}]}<tool_call|>"));
  spec.thinking_open = "<|channel>";
  spec.thinking_close = "<channel|>";
  EXPECT_TRUE(accepts(spec, "<|channel>thought\nhm<channel|><|tool_call>call:now{}<tool_call|>"));
}

TEST(ToolSyntax, Lfm2WritesPythonStyleCallsInOneList) {
  auto spec = weather(Style::lfm2);
  EXPECT_TRUE(accepts(spec, R"(<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>)"));
  EXPECT_TRUE(accepts(
      spec,
      R"(<|tool_call_start|>[get_weather(city="Oslo",days=3,note="x y"),now()]<|tool_call_end|>)"));
  EXPECT_FALSE(accepts(spec, R"(<|tool_call_start|>[get_weather(days=3)]<|tool_call_end|>)"));
  EXPECT_FALSE(accepts(
      spec, R"(<|tool_call_start|>[get_weather(city="Oslo",note="a"b")]<|tool_call_end|>)"));
  EXPECT_FALSE(accepts(spec, R"([get_weather(city="Oslo")])"));
  spec.parallel = false;
  EXPECT_FALSE(accepts(spec, R"(<|tool_call_start|>[now(),now()]<|tool_call_end|>)"));
}

}  // namespace
}  // namespace vkllm::sampling
