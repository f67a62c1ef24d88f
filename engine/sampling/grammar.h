// A byte-level grammar for constrained decoding: a set of rules, each a deterministic automaton
// over bytes whose edges may also call another rule (so the whole is a pushdown automaton, which
// nesting needs). The JSON-Schema, GBNF and regex compilers write rule bodies as NFA fragments;
// define() determinizes each, finish() drops states that cannot reach an end and checks that
// every rule makes progress before it recurses. Compiling is bounded twice over: by the number of
// states (memory) and by a work budget (time: a short pattern such as `.{0,100}.{0,100}` can
// need millions of steps for few states), and going past either is a FormatError that names the
// construct being compiled.
#pragma once

#include <bitset>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace vkllm::sampling::grammar {

using ByteSet = std::bitset<256>;

// Special tokens (control and end-of-generation tokens: <|channel|>, [TOOL_CALLS], <|call|>) have
// no bytes of their own, so a grammar names one by its text between two kSpecialByte (0xFF, never
// part of UTF-8) and the vocabulary index (vocabulary_index.h) gives each special token exactly
// those bytes while keeping every other token with a 0xFF byte out. Every byte set a grammar
// writes drops kSpecialByte (NfaBuilder::bytes), so only special_token() reads it: a format
// allows a special token where it names it and nowhere else, and never one spelled in pieces.
inline constexpr uint8_t kSpecialByte = 0xFF;
// The bytes that stand for the special token whose text is `text`.
std::string special_token_bytes(std::string_view text);
// Whether `bytes` is what special_token_bytes writes (one special token, text not empty).
bool is_special_token_bytes(std::string_view bytes);

struct ByteEdge {
  uint8_t lo;
  uint8_t hi;
  int32_t target;  // node id
};

struct CallEdge {
  int32_t rule;
  int32_t ret;  // node id where the caller continues once the rule is done
};

struct Node {
  std::vector<ByteEdge> bytes;  // sorted by lo, disjoint (the rule automaton is deterministic)
  std::vector<CallEdge> calls;
  bool final = false;  // the rule may end here
  int32_t rule = 0;
};

struct Grammar {
  std::vector<Node> nodes;
  std::vector<int32_t> rule_start;  // rule id -> start node id
  std::vector<std::string> rule_names;
  int32_t root = 0;  // rule id
  // Nodes with the same shape id agree on final, the rules they call and the bytes they read.
  std::vector<int32_t> shape;

  // The target of `node`'s byte edge for `b`, or -1.
  int32_t step(int32_t node, uint8_t b) const {
    for (const ByteEdge& e : nodes[static_cast<size_t>(node)].bytes) {
      if (b < e.lo) return -1;
      if (b <= e.hi) return e.target;
    }
    return -1;
  }
};

// One rule's NFA while it is being written.
class NfaBuilder {
 public:
  int32_t node();
  void eps(int32_t from, int32_t to);
  // An edge for the bytes of `set`, less kSpecialByte.
  void bytes(int32_t from, const ByteSet& set, int32_t to);
  // An edge for kSpecialByte alone (special_token()).
  void special_byte(int32_t from, int32_t to);
  void call(int32_t from, int32_t rule, int32_t to);

  struct NfaNode {
    std::vector<int32_t> eps;
    std::vector<std::pair<ByteSet, int32_t>> bytes;
    std::vector<CallEdge> calls;
  };
  std::vector<NfaNode> nodes;
};

// A piece of a rule body: writes itself starting at `from` and returns the node where it ends.
using Frag = std::function<int32_t(NfaBuilder&, int32_t from)>;

ByteSet byte_range(uint8_t lo, uint8_t hi);
Frag empty();
Frag literal(std::string bytes);
// The special token whose text is `text` (one token: see kSpecialByte).
Frag special_token(std::string text);
Frag cls(ByteSet set);
Frag seq(std::vector<Frag> parts);
Frag alt(std::vector<Frag> choices);
Frag opt(Frag f);
// `f` between min and max times; max < 0 is unbounded. Copies `f` max (or min+1) times.
Frag repeat(Frag f, int min, int max);
Frag call(int32_t rule);

// Work units one compile may spend (NFA nodes visited and byte-class edges followed while
// determinizing, 200 per DFA state; a unit is ~40 ns): a few tenths of a second of one core. A
// large real schema (a dozen properties, strings of up to 1000 characters, arrays of 100 items)
// needs about a third of it.
inline constexpr uint64_t kDefaultWorkBudget = 10'000'000;

class GrammarBuilder {
 public:
  // `error_prefix` starts every error message ("invalid JSON schema in format: ").
  explicit GrammarBuilder(std::string error_prefix = "invalid grammar: ",
                          uint64_t work_budget = kDefaultWorkBudget);

  // Rules are declared first so bodies can call rules defined later (recursion).
  int32_t declare(std::string name);
  // Throws FormatError when the rule grows past the size limits or the work budget runs out;
  // `what` names the construct for that message (e.g. "\"pattern\" \"a{0,99}\""), the rule's
  // name when empty. With `strip_empty`, the rule matches its body's strings except the empty
  // one (callers make their calls of it optional; rules must not match the empty string).
  void define(int32_t rule, const Frag& body, const std::string& what = {},
              bool strip_empty = false);
  // Throws FormatError if the root allows no string or a rule can recurse without progress (the
  // messages given, or ones naming the rule).
  Grammar finish(int32_t root, const std::string& recursion_error = {},
                 const std::string& no_string_error = {});

  size_t total_states() const { return total_states_; }
  uint64_t work_done() const { return work_done_; }
  const std::string& error_prefix() const { return error_prefix_; }

 private:
  struct Dfa {
    std::vector<Node> nodes;  // local ids, start = 0
    bool defined = false;
  };
  std::vector<std::string> names_;
  std::vector<Dfa> rules_;
  size_t total_states_ = 0;
  std::string error_prefix_;
  uint64_t work_budget_;
  uint64_t work_done_ = 0;
};

}  // namespace vkllm::sampling::grammar
