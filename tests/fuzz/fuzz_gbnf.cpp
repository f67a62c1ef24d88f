// The GBNF compiler on arbitrary grammars: the input is a grammar, a NUL byte, and bytes that
// pick each next byte among those the grammar allows. Compiling may fail only with FormatError,
// and within the fuzzer's per-input time limit (the compiler's work budget, lowered here, bounds
// it); a walk
// through a compiled grammar never reaches a dead end.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "engine/sampling/gbnf_compiler.h"
#include "engine/sampling/grammar_matcher.h"
#include "engine/sampling/token_constraint.h"

// A thirtieth of the server's budget: instrumented for coverage and sanitizers, a unit of work
// costs tens of times more, and an input must stay within -timeout.
constexpr uint64_t kFuzzWorkBudget = vkllm::sampling::grammar::kDefaultWorkBudget / 30;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace vkllm::sampling;
  const auto* nul = static_cast<const uint8_t*>(std::memchr(data, 0, size));
  const size_t text_size = nul ? static_cast<size_t>(nul - data) : size;
  grammar::Grammar g;
  try {
    g = compile_gbnf(std::string_view(reinterpret_cast<const char*>(data), text_size),
                     kFuzzWorkBudget);
  } catch (const FormatError&) {
    return 0;
  }
  grammar::Matcher m(g);
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
  }
  return 0;
}
