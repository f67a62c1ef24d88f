#include "engine/sampling/grammar_matcher.h"

#include <algorithm>
#include <unordered_set>

namespace vkllm::sampling::grammar {

void close(const Grammar& g, Stack s, std::vector<Stack>& out, bool& popped) {
  const Node& n = g.nodes[static_cast<size_t>(s.back())];
  if (n.final) {
    if (s.size() == 1) {
      popped = true;
    } else {
      Stack t(s.begin(), s.end() - 1);
      close(g, std::move(t), out, popped);
    }
  }
  for (const CallEdge& c : n.calls) {
    Stack t = s;
    t.back() = c.ret;
    t.push_back(g.rule_start[static_cast<size_t>(c.rule)]);
    close(g, std::move(t), out, popped);
  }
  if (!n.bytes.empty()) out.push_back(std::move(s));
}

namespace {
void normalize(std::vector<Stack>& v) {
  if (v.size() < 2) return;
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}
}  // namespace

void step(const Grammar& g, const std::vector<Stack>& in, uint8_t b, std::vector<Stack>& out,
          bool& popped) {
  out.clear();
  for (const Stack& s : in) {
    const int32_t t = g.step(s.back(), b);
    if (t < 0) continue;
    Stack next = s;
    next.back() = t;
    close(g, std::move(next), out, popped);
  }
  normalize(out);
}

Verdict classify(const Grammar& g, const Stack& suffix, std::string_view bytes) {
  std::vector<Stack> cur{suffix}, next;
  bool escaped = false;
  for (size_t i = 0; i < bytes.size(); ++i) {
    bool popped = false;
    step(g, cur, static_cast<uint8_t>(bytes[i]), next, popped);
    std::swap(cur, next);
    if (i + 1 == bytes.size()) {
      if (!cur.empty() || popped) return Verdict::kAccept;
    } else {
      escaped |= popped;
    }
    if (cur.empty()) return escaped ? Verdict::kUncertain : Verdict::kReject;
  }
  return bytes.empty() ? Verdict::kAccept : (escaped ? Verdict::kUncertain : Verdict::kReject);
}

int distinguishing_depth(const Grammar& g, int32_t a, int32_t b, int limit) {
  // Breadth-first over pairs of nodes reached by the same bytes: the first pair of a different
  // shape is at the depth of the shortest distinguishing string. A called rule is the same on
  // both sides, and reads at least one byte before returning to the pair of return nodes.
  std::vector<std::pair<int32_t, int32_t>> level{{a, b}}, next;
  std::unordered_set<uint64_t> seen;
  auto visit = [&](int32_t x, int32_t y) {
    if (x == y) return;
    const uint64_t key =
        (static_cast<uint64_t>(static_cast<uint32_t>(x)) << 32) | static_cast<uint32_t>(y);
    if (!seen.insert(key).second) return;
    next.emplace_back(x, y);
  };
  for (int depth = 0; depth <= limit && !level.empty(); ++depth) {
    next.clear();
    for (auto [x, y] : level) {
      if (x == y) continue;
      if (g.shape[static_cast<size_t>(x)] != g.shape[static_cast<size_t>(y)]) return depth;
      const Node& nx = g.nodes[static_cast<size_t>(x)];
      const Node& ny = g.nodes[static_cast<size_t>(y)];
      for (size_t i = 0; i < nx.calls.size(); ++i) visit(nx.calls[i].ret, ny.calls[i].ret);
      std::vector<int> cuts;
      for (const ByteEdge& e : nx.bytes) cuts.push_back(e.lo);
      for (const ByteEdge& e : ny.bytes) cuts.push_back(e.lo);
      for (int c : cuts) {
        const auto byte = static_cast<uint8_t>(c);
        visit(g.step(x, byte), g.step(y, byte));
      }
      // A range of x may be split in y (or the other way): every cut point starts a piece.
      for (const ByteEdge& e : nx.bytes) {
        if (e.hi < 255) {
          const auto byte = static_cast<uint8_t>(e.hi + 1);
          const int32_t tx = g.step(x, byte), ty = g.step(y, byte);
          if (tx >= 0 && ty >= 0) visit(tx, ty);
        }
      }
      for (const ByteEdge& e : ny.bytes) {
        if (e.hi < 255) {
          const auto byte = static_cast<uint8_t>(e.hi + 1);
          const int32_t tx = g.step(x, byte), ty = g.step(y, byte);
          if (tx >= 0 && ty >= 0) visit(tx, ty);
        }
      }
    }
    if (seen.size() > 4096) return depth + 1;  // too wide to be worth it: be conservative
    std::swap(level, next);
  }
  return limit + 1;
}

Matcher::Matcher(const Grammar& g) : g_(&g) {
  bool popped = false;
  close(g, Stack{g.rule_start[static_cast<size_t>(g.root)]}, stacks_, popped);
  normalize(stacks_);
  complete_ = popped;
}

bool Matcher::advance(std::string_view bytes) {
  if (bytes.empty()) return true;
  std::vector<Stack> cur = stacks_, next;
  bool popped = false;
  for (size_t i = 0; i < bytes.size(); ++i) {
    popped = false;
    step(*g_, cur, static_cast<uint8_t>(bytes[i]), next, popped);
    std::swap(cur, next);
    // A path that ends the root only survives if that was the last byte.
    if (cur.empty() && !(popped && i + 1 == bytes.size())) return false;
  }
  stacks_ = std::move(cur);
  complete_ = popped;
  return true;
}

ByteSet Matcher::next_bytes() const {
  ByteSet s;
  for (const Stack& st : stacks_) {
    for (const ByteEdge& e : g_->nodes[static_cast<size_t>(st.back())].bytes) {
      for (int b = e.lo; b <= e.hi; ++b) s.set(static_cast<size_t>(b));
    }
  }
  return s;
}

}  // namespace vkllm::sampling::grammar
