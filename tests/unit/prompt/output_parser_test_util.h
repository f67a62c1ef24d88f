// Shared by the output parser tests: run a parser over pieces of a text, compare results, and
// check that any way of cutting the text gives the result of feeding it whole.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "server/prompt/output_parser.h"

namespace vkllm::prompt::testing {

struct ExpectedCall {
  std::string name;
  std::string arguments;  // JSON text, compared with key order
};

struct Expected {
  std::string content;
  std::string thinking;
  std::vector<ExpectedCall> calls;
};

struct Parsed {
  std::string content;
  std::string thinking;
  std::vector<ToolCall> calls;
};

inline void append(Parsed& into, ParsedDelta delta) {
  into.content += delta.content;
  into.thinking += delta.thinking;
  for (auto& c : delta.tool_calls) into.calls.push_back(std::move(c));
}

inline Parsed run_pieces(const ParserConfig& config, const std::vector<std::string_view>& pieces) {
  OutputParser parser(config);
  Parsed out;
  for (auto piece : pieces) append(out, parser.feed(piece));
  append(out, parser.finish());
  return out;
}

inline Parsed run_whole(const ParserConfig& config, std::string_view text) {
  return run_pieces(config, {text});
}

// Every call has a fresh id of Ollama's shape and the running index of the response.
inline void expect_ids_and_indexes(const Parsed& p) {
  for (size_t i = 0; i < p.calls.size(); ++i) {
    const auto& id = p.calls[i].id;
    EXPECT_EQ(id.size(), 13u) << id;
    EXPECT_TRUE(id.starts_with("call_")) << id;
    for (size_t k = 5; k < id.size(); ++k) {
      char c = id[k];
      EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) << id;
    }
    EXPECT_EQ(p.calls[i].index, static_cast<int>(i));
    for (size_t j = 0; j < i; ++j) EXPECT_NE(p.calls[j].id, id);
  }
}

inline void expect_result(const Parsed& got, const Expected& want) {
  EXPECT_EQ(got.content, want.content);
  EXPECT_EQ(got.thinking, want.thinking);
  ASSERT_EQ(got.calls.size(), want.calls.size());
  for (size_t i = 0; i < want.calls.size(); ++i) {
    EXPECT_EQ(got.calls[i].name, want.calls[i].name) << "call " << i;
    EXPECT_EQ(got.calls[i].arguments.dump(),
              nlohmann::ordered_json::parse(want.calls[i].arguments).dump())
        << "call " << i;
  }
  expect_ids_and_indexes(got);
}

// Same content, thinking, names, arguments and indexes (ids are fresh each time).
inline void expect_same(const Parsed& got, const Parsed& whole) {
  EXPECT_EQ(got.content, whole.content);
  EXPECT_EQ(got.thinking, whole.thinking);
  ASSERT_EQ(got.calls.size(), whole.calls.size());
  for (size_t i = 0; i < whole.calls.size(); ++i) {
    EXPECT_EQ(got.calls[i].name, whole.calls[i].name);
    EXPECT_EQ(got.calls[i].arguments.dump(), whole.calls[i].arguments.dump());
    EXPECT_EQ(got.calls[i].index, whole.calls[i].index);
  }
  expect_ids_and_indexes(got);
}

// Pieces the way a tokenizer streams them: markers such as <|python_tag|>, [TOOL_CALLS] or
// <think> as one token, words with their leading space, runs of spaces, single punctuation.
inline std::vector<std::string_view> token_pieces(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  auto is_word = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           static_cast<unsigned char>(c) >= 0x80;
  };
  while (i < text.size()) {
    size_t j = i + 1;
    char c = text[i];
    auto close = [&](char open, char end) {
      if (c != open) return false;
      size_t e = text.find(end, i + 1);
      if (e == std::string_view::npos || e - i > 20) return false;
      for (size_t k = i + 1; k < e; ++k) {
        if (text[k] == ' ' || text[k] == '\n' || text[k] == '"') return false;
      }
      j = e + 1;
      return true;
    };
    if (close('<', '>') || close('[', ']')) {
    } else if (c == ' ' && j < text.size() && is_word(text[j])) {
      while (j < text.size() && is_word(text[j])) ++j;
    } else if (is_word(c)) {
      while (j < text.size() && is_word(text[j])) ++j;
    } else if (c == ' ' || c == '\n') {
      while (j < text.size() && text[j] == c) ++j;
    }
    out.push_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

inline std::vector<std::string_view> byte_pieces(std::string_view text) {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < text.size(); ++i) out.push_back(text.substr(i, 1));
  return out;
}

inline std::vector<std::string_view> random_pieces(std::string_view text, std::mt19937& rng) {
  std::vector<std::string_view> out;
  std::uniform_int_distribution<size_t> len(0, 12);
  size_t i = 0;
  while (i < text.size()) {
    size_t n = std::min(len(rng), text.size() - i);
    out.push_back(text.substr(i, n));  // empty pieces too: a token may decode to nothing
    i += n;
  }
  return out;
}

// Feeding `text` token by token, byte by byte and at random cut points (a fresh seed each run,
// printed on failure) gives what feeding it whole gives.
inline void expect_streaming_matches(const ParserConfig& config, std::string_view text) {
  Parsed whole = run_whole(config, text);
  {
    SCOPED_TRACE("token by token");
    expect_same(run_pieces(config, token_pieces(text)), whole);
  }
  {
    SCOPED_TRACE("byte by byte");
    expect_same(run_pieces(config, byte_pieces(text)), whole);
  }
  unsigned seed = std::random_device{}();
  SCOPED_TRACE("random cut points, seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (int round = 0; round < 20; ++round) {
    expect_same(run_pieces(config, random_pieces(text, rng)), whole);
    if (::testing::Test::HasFailure()) return;
  }
}

inline ParserConfig tools_config(std::string tag, std::vector<std::string> names) {
  ParserConfig c;
  c.tool_tag = std::move(tag);
  c.tool_names = std::move(names);
  return c;
}

inline ParserConfig thinking_config(std::string open, std::string close, bool starts_inside) {
  ParserConfig c;
  c.think_open = std::move(open);
  c.think_close = std::move(close);
  c.thinking = true;
  c.starts_in_thinking = starts_inside;
  return c;
}

}  // namespace vkllm::prompt::testing
