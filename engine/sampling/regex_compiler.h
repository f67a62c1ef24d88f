// JSON Schema "pattern" (an ECMA-262 regular expression) as a grammar fragment for the content
// of a JSON string: the decoded string matches the pattern, and the fragment writes it as JSON
// (quotes, backslashes and control characters escaped). Patterns search, so they are unanchored
// unless they start with ^ / end with $. Supported: literals and escapes (\d \w \s \D \W \S,
// \n \t ..., \xHH, \uHHHH), classes with ranges and negation (ASCII members; negated classes
// and . allow any non-ASCII character), groups ( ) (?: ) (?<name> ), alternation, and the
// quantifiers * + ? {n} {n,} {n,m} (lazy forms too: they match the same strings). Lookaround,
// backreferences, \b, \p{..} and anchors elsewhere than the ends are a FormatError.
//
// compile_regex is the same language for a whole output (vLLM's structured_outputs "regex"): the
// text is written as it is (no JSON escaping) and the whole output must match (^ and $ at the
// ends change nothing).
#pragma once

#include <string>

#include "engine/sampling/grammar.h"

namespace vkllm::sampling {

grammar::Frag compile_pattern(const std::string& pattern);
grammar::Frag compile_regex(const std::string& pattern);

}  // namespace vkllm::sampling
