// Running a Grammar over bytes. A position is a set of stacks of node ids (the top is the node
// of the innermost rule, the ones below are where each caller continues), since calls may leave
// more than one way to go on. Stacks are kept canonical: their top node has byte edges; calls
// and rule ends are followed eagerly (the closure).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/sampling/grammar.h"

namespace vkllm::sampling::grammar {

using Stack = std::vector<int32_t>;

// Appends to `out` the canonical stacks reachable from `s` without reading a byte. Sets
// `popped` when the bottom frame's rule can end (with nothing known below it).
void close(const Grammar& g, Stack s, std::vector<Stack>& out, bool& popped);

// Reads one byte from every stack of `in` into `out` (sorted, without duplicates).
void step(const Grammar& g, const std::vector<Stack>& in, uint8_t b, std::vector<Stack>& out,
          bool& popped);

enum class Verdict : uint8_t { kReject, kAccept, kUncertain };

// Whether `bytes` can be read from the canonical stack `suffix`, a stack's top frames with
// unknown frames below: kAccept if some path reads them all without going below the suffix
// (ending the bottom rule exactly with the last byte counts), kUncertain if a path only gets
// further by ending the bottom rule earlier (it depends on the frames below), else kReject.
Verdict classify(const Grammar& g, const Stack& suffix, std::string_view bytes);

// The length of the shortest byte string that can tell nodes `a` and `b` apart (reading it from
// stacks that differ only in their top, `a` or `b`): where one can end its rule, read a byte,
// call a rule, or return to a place the other cannot. limit + 1 if none up to `limit` bytes.
// Tokens shorter than that get the same verdict at both, so a cached mask can be reused.
int distinguishing_depth(const Grammar& g, int32_t a, int32_t b, int limit);

// A whole sequence's position: starts at the root rule, and the root ending is the output being
// complete (nothing may follow the root, not even whitespace).
class Matcher {
 public:
  explicit Matcher(const Grammar& g);

  // Reads `bytes`; returns false and changes nothing if they cannot come next.
  bool advance(std::string_view bytes);
  bool complete() const { return complete_; }
  // Complete, and no byte can follow.
  bool finished() const { return complete_ && stacks_.empty(); }
  const std::vector<Stack>& stacks() const { return stacks_; }
  // The bytes that can come next.
  ByteSet next_bytes() const;

 private:
  const Grammar* g_;
  std::vector<Stack> stacks_;
  bool complete_ = false;
};

}  // namespace vkllm::sampling::grammar
