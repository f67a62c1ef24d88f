// A byte-level grammar for constrained decoding: a set of rules, each a deterministic automaton
// over bytes whose edges may also call another rule (so the whole is a pushdown automaton, which
// nesting needs). The JSON-Schema compiler writes rule bodies as NFA fragments; finish()
// determinizes them, drops states that cannot reach an end and checks that every rule makes
// progress before it recurses.
#pragma once

#include <bitset>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace vkllm::sampling::grammar {

using ByteSet = std::bitset<256>;

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
  void bytes(int32_t from, const ByteSet& set, int32_t to);
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
Frag cls(ByteSet set);
Frag seq(std::vector<Frag> parts);
Frag alt(std::vector<Frag> choices);
Frag opt(Frag f);
// `f` between min and max times; max < 0 is unbounded. Copies `f` max (or min+1) times.
Frag repeat(Frag f, int min, int max);
Frag call(int32_t rule);

class GrammarBuilder {
 public:
  // Rules are declared first so bodies can call rules defined later (recursion).
  int32_t declare(std::string name);
  // Throws FormatError when the rule grows past the size limits.
  void define(int32_t rule, const Frag& body);
  // Throws FormatError if the root allows no string or a rule can recurse without progress.
  Grammar finish(int32_t root);

  size_t total_states() const { return total_states_; }

 private:
  struct Dfa {
    std::vector<Node> nodes;  // local ids, start = 0
    bool defined = false;
  };
  std::vector<std::string> names_;
  std::vector<Dfa> rules_;
  size_t total_states_ = 0;
};

}  // namespace vkllm::sampling::grammar
