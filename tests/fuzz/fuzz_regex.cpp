// The regex compiler on arbitrary patterns, both ways it is used: as a JSON Schema "pattern"
// (the content of a JSON string, searched for) and as vLLM's whole-output regex. The input is a
// pattern, a NUL byte, and bytes that pick each next byte among those the grammar allows.
// Compiling may fail only with FormatError, and within the fuzzer's per-input time limit (the
// compiler's work budget, lowered here, bounds it); a walk never reaches a dead end, and a complete
// JSON walk is a valid JSON string.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/sampling/grammar_matcher.h"
#include "engine/sampling/regex_compiler.h"
#include "engine/sampling/token_constraint.h"

namespace {

using namespace vkllm::sampling;

// A thirtieth of the server's budget: instrumented for coverage and sanitizers, a unit of work
// costs tens of times more, and an input must stay within -timeout.
constexpr uint64_t kFuzzWorkBudget = grammar::kDefaultWorkBudget / 30;

std::string walk(const grammar::Grammar& g, const uint8_t* data, size_t size) {
  grammar::Matcher m(g);
  std::string out;
  for (size_t i = 0; i < size && !m.finished(); ++i) {
    const auto next = m.next_bytes();
    if (next.none()) {
      if (!m.complete()) __builtin_trap();  // a dead end
      break;
    }
    size_t pick = data[i] % next.count();
    size_t b = next._Find_first();
    while (pick-- > 0) b = next._Find_next(b);
    const char c = static_cast<char>(b);
    if (!m.advance(std::string_view(&c, 1))) __builtin_trap();  // next_bytes promised it
    out += c;
  }
  if (!m.complete()) out.clear();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto* nul = static_cast<const uint8_t*>(std::memchr(data, 0, size));
  const size_t text_size = nul ? static_cast<size_t>(nul - data) : size;
  const std::string pattern(reinterpret_cast<const char*>(data), text_size);
  const uint8_t* rest = data + std::min(size, text_size + 1);
  const size_t rest_size = size - std::min(size, text_size + 1);
  for (bool raw : {false, true}) {
    grammar::Grammar g;
    try {
      grammar::GrammarBuilder gb(raw ? "invalid regex: " : "invalid JSON schema in format: ",
                                 kFuzzWorkBudget);
      const int32_t root = gb.declare("root");
      if (raw) {
        gb.define(root, compile_regex(pattern), "the regex", true);
      } else {
        gb.define(root,
                  grammar::seq(
                      {grammar::literal("\""), compile_pattern(pattern), grammar::literal("\"")}),
                  "the pattern");
      }
      g = gb.finish(root);
    } catch (const FormatError&) {
      continue;
    }
    const std::string out = walk(g, rest, rest_size);
    if (!raw && !out.empty() && !nlohmann::json::accept(out)) __builtin_trap();
  }
  return 0;
}
