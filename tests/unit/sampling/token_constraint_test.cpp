// Constrained decoding over real vocabularies: random schemas, random logits (fresh each run),
// the real Sampler at temperature 1.5. Every finished output parses and validates, "json"
// always gives a JSON object, the mask never blocks every token of an unfinished sequence, and
// the cached masks equal a token-by-token check.
#include "engine/sampling/token_constraint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

#include "engine/gguf/gguf_file.h"
#include "engine/sampling/sampler.h"
#include "engine/sampling/vocabulary_index.h"
#include "engine/tokenizer/tokenizer.h"
#include "schema_validator.h"
#include "tests/support/seeded.h"

namespace vkllm::sampling {
namespace {

using json = nlohmann::ordered_json;

struct Vocab {
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::shared_ptr<const VocabularyIndex> index;
  std::vector<float> closer_bias;  // pushes a long random walk towards closing its values
};

const Vocab& vocab(const std::string& name) {
  static std::map<std::string, Vocab> cache;
  Vocab& v = cache[name];
  if (!v.tok) {
    v.tok = tokenizer::Tokenizer::from_gguf(gguf::GgufFile::open(
        std::string(VKLLM_SHARED_DIR) + "/testdata/vocab/ggml-vocab-" + name + ".gguf"));
    v.index = build_vocabulary_index(*v.tok);
    v.closer_bias.assign(static_cast<size_t>(v.tok->vocab_size()), 0.0f);
    for (int32_t id = 0; id < v.tok->vocab_size(); ++id) {
      const std::string p = v.tok->token_to_piece(id);
      if (v.tok->is_end_of_generation(id) || p == "\"" || p == "}" || p == "]") {
        v.closer_bias[static_cast<size_t>(id)] = 14.0f;
      } else if (p == "," || p == "0") {
        v.closer_bias[static_cast<size_t>(id)] = 8.0f;
      }
    }
  }
  return v;
}

using Seeded = test::Seeded<>;

const char* kWords[] = {"name", "age", "id", "tags", "when", "value", "items", "ok", "é", "a b"};

json random_scalar(std::mt19937& rng) {
  switch (rng() % 5) {
    case 0:
      return kWords[rng() % 10];
    case 1:
      return static_cast<int>(rng() % 200) - 100;
    case 2:
      return (rng() % 2) != 0;
    case 3:
      return nullptr;
    default:
      return (static_cast<int>(rng() % 2000) - 1000) / 8.0;
  }
}

json random_schema(std::mt19937& rng, int depth, json& defs) {
  const int kinds = depth < 3 ? 12 : 8;
  switch (rng() % kinds) {
    case 0: {
      json s = {{"type", "string"}};
      if (rng() % 4 == 0) {
        const char* patterns[] = {R"(^[A-Z]{2,3}-\d{1,3}$)", "^(ab|cd)+$", "x[0-9]y",
                                  R"(^\w+( \w+)?$)"};
        s["pattern"] = patterns[rng() % 4];
      } else if (rng() % 3 == 0) {
        const char* formats[] = {"date", "time", "date-time", "uuid", "email", "ipv4"};
        s["format"] = formats[rng() % 6];
      } else {
        const int min = static_cast<int>(rng() % 4);
        if (rng() % 2) s["minLength"] = min;
        if (rng() % 2) s["maxLength"] = min + static_cast<int>(rng() % 8);
      }
      return s;
    }
    case 1: {
      json s = {{"type", "integer"}};
      const int lo = static_cast<int>(rng() % 2000) - 1000;
      if (rng() % 2) s["minimum"] = lo;
      if (rng() % 2) s["maximum"] = lo + static_cast<int>(rng() % 3000);
      if (rng() % 4 == 0) s["exclusiveMaximum"] = lo + 1 + static_cast<int>(rng() % 100);
      return s;
    }
    case 2: {
      json s = {{"type", "number"}};
      if (rng() % 2) s["minimum"] = static_cast<int>(rng() % 20) - 10;
      if (rng() % 2) s["maximum"] = 10 + static_cast<int>(rng() % 20);
      return s;
    }
    case 3:
      return json{{"type", rng() % 2 ? "boolean" : "null"}};
    case 4: {
      json e = json::array();
      for (int i = 0, n = 1 + static_cast<int>(rng() % 4); i < n; ++i)
        e.push_back(random_scalar(rng));
      return json{{"enum", e}};
    }
    case 5:
      return json{{"const", random_scalar(rng)}, {"description", "a constant"}};
    case 6:
      return json{{"type", json::array({"string", "null"})}, {"maxLength", 6}};
    case 7: {
      const std::string name = "d" + std::to_string(defs.size());
      defs[name] = json{{"type", "integer"}, {"minimum", 0}};
      return json{{"$ref", "#/$defs/" + name}};
    }
    case 8:
    case 9: {
      json props = json::object();
      json required = json::array();
      std::vector<std::string> names(std::begin(kWords), std::end(kWords));
      std::shuffle(names.begin(), names.end(), rng);
      for (int i = 0, n = 1 + static_cast<int>(rng() % 4); i < n; ++i) {
        props[names[static_cast<size_t>(i)]] = random_schema(rng, depth + 1, defs);
        if (rng() % 2) required.push_back(names[static_cast<size_t>(i)]);
      }
      json s = {{"type", "object"}, {"properties", props}, {"required", required}};
      switch (rng() % 4) {
        case 0:
          s["additionalProperties"] = false;
          break;
        case 1:
          s["additionalProperties"] = json{{"type", "integer"}};
          break;
        case 2:
          s["additionalProperties"] = true;
          break;
        default:
          break;
      }
      return s;
    }
    case 10: {
      json s = {{"type", "array"}, {"items", random_schema(rng, depth + 1, defs)}};
      const int min = static_cast<int>(rng() % 3);
      if (rng() % 2) s["minItems"] = min;
      if (rng() % 2) s["maxItems"] = min + static_cast<int>(rng() % 3);
      if (rng() % 4 == 0) s["prefixItems"] = json::array({json{{"type", "boolean"}}});
      return s;
    }
    default: {
      // oneOf over branches of different types, so that exactly one matches.
      json branches =
          json::array({json{{"type", "string"}, {"maxLength", 5}}, json{{"type", "integer"}},
                       json{{"type", "null"}}, json{{"type", "boolean"}}});
      std::shuffle(branches.begin(), branches.end(), rng);
      branches.erase(branches.begin() + 2 + static_cast<int>(rng() % 2), branches.end());
      return json{{rng() % 2 ? "oneOf" : "anyOf", branches}};
    }
  }
}

json random_root(std::mt19937& rng) {
  json defs = json::object();
  json s = random_schema(rng, 0, defs);
  for (int i = 0; i < 3 && s.value("type", json()) != json("object"); ++i)
    s = random_schema(rng, 0, defs);
  if (!defs.empty()) s["$defs"] = defs;
  return s;
}

struct Outcome {
  bool finished = false;
  std::string text;
};

// One sequence; checks the per-step properties as it goes.
void generate(const Vocab& v, const std::shared_ptr<const CompiledFormat>& format,
              std::mt19937& rng, int cross_checks, Outcome& out) {
  TokenConstraint c(format, v.index);
  TokenConstraint shadow(format, v.index);  // never masks: allows() checks token by token
  SamplingParams params;
  params.temperature = 1.5f;
  params.seed = static_cast<int64_t>(rng() >> 1);
  Sampler sampler(params);
  std::normal_distribution<float> noise(0.0f, 2.0f);
  const size_t n = static_cast<size_t>(v.tok->vocab_size());
  std::vector<float> logits(n);
  for (int step = 0; step < 400; ++step) {
    for (size_t i = 0; i < n; ++i) logits[i] = noise(rng) + (step >= 40 ? v.closer_bias[i] : 0.0f);
    c.mask(logits);
    size_t allowed = 0;
    for (size_t i = 0; i < n; ++i) allowed += std::isfinite(logits[i]);
    EXPECT_GT(allowed, 0u) << "every token blocked after: " << out.text;
    if (allowed == 0) return;
    for (int32_t id : v.index->end_of_generation()) {
      EXPECT_EQ(std::isfinite(logits[static_cast<size_t>(id)]), c.complete()) << out.text;
    }
    if (cross_checks > 0 && rng() % 8 == 0) {
      --cross_checks;
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(std::isfinite(logits[i]), shadow.allows(static_cast<int32_t>(i)))
            << "token " << i << " '" << v.tok->token_to_piece(static_cast<int32_t>(i))
            << "' after: " << out.text;
      }
    }
    const int32_t t = sampler.sample(logits);
    EXPECT_TRUE(c.allows(t));
    EXPECT_TRUE(c.accept(t)) << t;
    EXPECT_TRUE(shadow.accept(t)) << t;
    sampler.accept(t);
    if (v.tok->is_end_of_generation(t)) {
      EXPECT_TRUE(c.finished());
      out.finished = true;
      return;
    }
    out.text += v.tok->token_to_piece(t);
    if (c.finished()) {
      out.finished = true;
      return;
    }
  }
}

class ConstrainedDecoding : public ::testing::TestWithParam<std::string> {};

TEST_P(ConstrainedDecoding, RandomSchemasGiveValidOutput) {
  const Vocab& v = vocab(GetParam());
  Seeded s;
  SCOPED_TRACE("seed " + std::to_string(s.seed));
  int finished = 0, total = 0;
  for (int i = 0; i < 12; ++i) {
    const json schema = random_root(s.rng);
    SCOPED_TRACE("schema " + schema.dump());
    const auto format = compile_format_ordered(schema);
    for (int k = 0; k < 2; ++k) {
      Outcome o;
      generate(v, format, s.rng, 2, o);
      if (HasFatalFailure()) return;
      ++total;
      if (!o.finished) continue;
      ++finished;
      json value;
      ASSERT_NO_THROW(value = json::parse(o.text)) << o.text;
      EXPECT_EQ(testing::schema_violation(schema, value, schema), "") << o.text;
    }
  }
  EXPECT_GE(finished * 4, total * 3) << finished << " of " << total << " finished";
}

TEST_P(ConstrainedDecoding, JsonFormatGivesJsonObjects) {
  const Vocab& v = vocab(GetParam());
  Seeded s;
  SCOPED_TRACE("seed " + std::to_string(s.seed));
  const auto format = compile_format("json");
  int finished = 0;
  for (int i = 0; i < 6; ++i) {
    Outcome o;
    generate(v, format, s.rng, 1, o);
    if (HasFatalFailure()) return;
    if (!o.finished) continue;
    ++finished;
    json value;
    ASSERT_NO_THROW(value = json::parse(o.text)) << o.text;
    EXPECT_TRUE(value.is_object()) << o.text;
  }
  EXPECT_GE(finished, 4);
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, ConstrainedDecoding, ::testing::Values("llama-spm", "gpt-2"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n) ch = ch == '-' ? '_' : ch;
                           return n;
                         });

TEST(TokenConstraint, ControlTokensNeverAndEndOnlyWhenComplete) {
  const Vocab& v = vocab("llama-spm");
  TokenConstraint c(compile_format(json::parse(R"({"type":"integer"})")), v.index);
  std::vector<float> logits(static_cast<size_t>(v.tok->vocab_size()), 0.0f);
  c.mask(logits);
  for (int32_t id = 0; id < v.tok->vocab_size(); ++id) {
    if (v.tok->is_control(id)) {
      EXPECT_FALSE(std::isfinite(logits[static_cast<size_t>(id)])) << id;
    }
  }
  EXPECT_FALSE(c.allows(v.tok->eos()));
  // The value starts at its first character: SentencePiece's "▁42" (a space first) cannot come.
  const std::vector<int32_t> spaced = v.tok->encode("42", false, false);
  EXPECT_FALSE(c.allows(spaced.front()));
  for (const char* digit : {"4", "2"}) {
    int32_t id = 0;
    while (id < v.index->size() && v.index->bytes(id) != digit) ++id;
    ASSERT_TRUE(c.accept(id)) << digit;
  }
  EXPECT_TRUE(c.complete());
  EXPECT_FALSE(c.finished());  // more digits may follow
  EXPECT_TRUE(c.allows(v.tok->eos()));
  EXPECT_FALSE(c.accept(v.tok->encode("x", false, false).back()));
  EXPECT_TRUE(c.accept(v.tok->eos()));
  EXPECT_TRUE(c.finished());
}

TEST(TokenConstraint, FinishedAsSoonAsNothingCanFollow) {
  const Vocab& v = vocab("gpt-2");
  TokenConstraint c(compile_format("json"), v.index);
  const auto ids = v.tok->encode(R"({"a": [1, "x"]})", false, false);
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_FALSE(c.finished());
    ASSERT_TRUE(c.accept(ids[i])) << i;
  }
  EXPECT_TRUE(c.complete());
  EXPECT_TRUE(c.finished());
  std::vector<float> logits(static_cast<size_t>(v.tok->vocab_size()), 0.0f);
  c.mask(logits);
  for (size_t i = 0; i < logits.size(); ++i) {
    EXPECT_EQ(std::isfinite(logits[i]), v.tok->is_end_of_generation(static_cast<int32_t>(i))) << i;
  }
}

// Each character position of a bounded string is a node of its own; their masks are derived
// from the previous position's, checking only the tokens long enough to reach the bound.
TEST(TokenConstraint, BoundedStringMasksMatchTokenByToken) {
  const Vocab& v = vocab("gpt-2");
  const auto format = compile_format(json::parse(
      R"({"type":"object","properties":{"text":{"type":"string","maxLength":90}},"required":["text"]})"));
  const std::string text =
      R"({"text": "A bounded string: every position counts, so the mask near the end must refuse long tokens!"})";
  const auto ids = v.tok->encode(text, false, false);
  TokenConstraint c(format, v.index), shadow(format, v.index);
  std::vector<float> logits(static_cast<size_t>(v.tok->vocab_size()));
  bool checked_late = false;
  for (size_t step = 0; step < ids.size(); ++step) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    c.mask(logits);
    if (step % 3 == 0 || step + 4 >= ids.size()) {
      checked_late |= step + 4 >= ids.size();
      for (size_t i = 0; i < logits.size(); ++i) {
        ASSERT_EQ(std::isfinite(logits[i]), shadow.allows(static_cast<int32_t>(i)))
            << "step " << step << " token '" << v.tok->token_to_piece(static_cast<int32_t>(i))
            << "'";
      }
    }
    ASSERT_TRUE(c.accept(ids[step])) << step;
    ASSERT_TRUE(shadow.accept(ids[step])) << step;
  }
  EXPECT_TRUE(checked_late);
  EXPECT_TRUE(c.finished());
}

// Deep stacks: the cached masks are refined frame by frame down to the bottom.
TEST(TokenConstraint, DeepNestingMasksMatchTokenByToken) {
  const Vocab& v = vocab("gpt-2");
  const auto format = compile_format(json::parse(R"({"$defs":{"t":{"type":"object",
      "properties":{"k":{"type":"array","items":{"$ref":"#/$defs/t"}},"v":{"type":"string"}}}},
      "$ref":"#/$defs/t"})"));
  std::string text = "{\"v\": \"x\"}";
  for (int i = 0; i < 12; ++i) text = "{\"k\": [" + text + ", {}]}";
  const auto ids = v.tok->encode(text, false, false);
  TokenConstraint c(format, v.index), shadow(format, v.index);
  std::vector<float> logits(static_cast<size_t>(v.tok->vocab_size()));
  for (size_t step = 0; step <= ids.size(); ++step) {
    if (step % 7 == 3 || step == ids.size()) {
      std::fill(logits.begin(), logits.end(), 0.0f);
      c.mask(logits);
      for (size_t i = 0; i < logits.size(); ++i) {
        ASSERT_EQ(std::isfinite(logits[i]), shadow.allows(static_cast<int32_t>(i)))
            << "step " << step << " token '" << v.tok->token_to_piece(static_cast<int32_t>(i))
            << "'";
      }
    }
    if (step == ids.size()) break;
    ASSERT_TRUE(c.accept(ids[step])) << step;
    ASSERT_TRUE(shadow.accept(ids[step])) << step;
  }
  EXPECT_TRUE(c.finished());
}

}  // namespace
}  // namespace vkllm::sampling
