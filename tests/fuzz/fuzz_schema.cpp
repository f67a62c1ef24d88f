// The format compiler on arbitrary JSON, then a random walk through the grammar it built: the
// input is a format (JSON text), a NUL byte, and bytes that pick each next byte among those the
// grammar allows. Compiling may fail only with FormatError; a walk never reaches a dead end (no
// byte allowed yet not complete), and every complete walk is valid JSON.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/sampling/grammar_matcher.h"
#include "engine/sampling/json_schema_compiler.h"
#include "engine/sampling/token_constraint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto* nul = static_cast<const uint8_t*>(std::memchr(data, 0, size));
  const size_t text_size = nul ? static_cast<size_t>(nul - data) : size;
  const auto format = nlohmann::ordered_json::parse(data, data + text_size, nullptr, false);
  if (format.is_discarded()) return 0;
  vkllm::sampling::grammar::Grammar g;
  try {
    g = vkllm::sampling::compile_json_grammar(format);
  } catch (const vkllm::sampling::FormatError&) {
    return 0;
  }
  vkllm::sampling::grammar::Matcher m(g);
  std::string out;
  for (size_t i = text_size + 1; i < size && !m.finished(); ++i) {
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
  if (m.complete() && !nlohmann::json::accept(out)) __builtin_trap();
  return 0;
}
