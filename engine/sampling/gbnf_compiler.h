// llama.cpp's GBNF grammars (its `grammar` request field; syntax as in llama.cpp's
// grammars/README.md) compiled to a byte-level Grammar (grammar.h).
//
// Supported: rules `name ::= ...` (a rule ends at a newline unless inside parentheses or after
// `|`), `#` comments, "literals" and [classes] (ranges, `^` negation, \x \u \U \t \n \r and
// escaped punctuation; any Unicode code point), `.` (any character), rule references (before or
// after their definition), ( groups ), `|`, and the repetitions * + ? {m} {m,} {m,n} {,n}. The
// output starts with rule `root` and must match it whole. Token references (<[id]>, <name>,
// !<...>) are not supported; errors name the construct and where it is (line:column). A root
// that matches the empty string still needs at least one character: the model writes something.
#pragma once

#include <string_view>

#include "engine/sampling/grammar.h"

namespace vkllm::sampling {

// Throws FormatError with the text of the client's 400 ("invalid grammar: ..."). `work_budget`
// as in grammar.h (the fuzzer lowers it: sanitizers make each unit tens of times slower).
grammar::Grammar compile_gbnf(std::string_view text,
                              uint64_t work_budget = grammar::kDefaultWorkBudget);

}  // namespace vkllm::sampling
