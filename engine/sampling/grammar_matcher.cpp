#include "engine/sampling/grammar_matcher.h"

#include <algorithm>

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
