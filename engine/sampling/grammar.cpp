#include "engine/sampling/grammar.h"

#include <algorithm>
#include <array>
#include <map>
#include <tuple>
#include <unordered_map>

#include "engine/sampling/token_constraint.h"

namespace vkllm::sampling::grammar {

namespace {
// Bounds that keep a hostile schema from taking the server's memory or time.
constexpr size_t kMaxNfaNodes = 400000;
constexpr size_t kMaxRuleStates = 60000;
constexpr size_t kMaxTotalStates = 200000;

[[noreturn]] void too_large() {
  throw FormatError("the schema is too large to compile into a grammar");
}
}  // namespace

int32_t NfaBuilder::node() {
  if (nodes.size() >= kMaxNfaNodes) too_large();
  nodes.emplace_back();
  return static_cast<int32_t>(nodes.size() - 1);
}
void NfaBuilder::eps(int32_t from, int32_t to) {
  nodes[static_cast<size_t>(from)].eps.push_back(to);
}
void NfaBuilder::bytes(int32_t from, const ByteSet& set, int32_t to) {
  ByteSet text = set;
  text.reset(kSpecialByte);
  if (text.any()) nodes[static_cast<size_t>(from)].bytes.emplace_back(text, to);
}
void NfaBuilder::special_byte(int32_t from, int32_t to) {
  ByteSet s;
  s.set(kSpecialByte);
  nodes[static_cast<size_t>(from)].bytes.emplace_back(s, to);
}

std::string special_token_bytes(std::string_view text) {
  std::string s(1, static_cast<char>(kSpecialByte));
  s.append(text);
  s.push_back(static_cast<char>(kSpecialByte));
  return s;
}

bool is_special_token_bytes(std::string_view bytes) {
  const char mark = static_cast<char>(kSpecialByte);
  return bytes.size() >= 3 && bytes.front() == mark && bytes.back() == mark &&
         bytes.substr(1, bytes.size() - 2).find(mark) == std::string_view::npos;
}
void NfaBuilder::call(int32_t from, int32_t rule, int32_t to) {
  nodes[static_cast<size_t>(from)].calls.push_back({rule, to});
}

ByteSet byte_range(uint8_t lo, uint8_t hi) {
  ByteSet s;
  for (int b = lo; b <= hi; ++b) s.set(static_cast<size_t>(b));
  return s;
}

Frag empty() {
  return [](NfaBuilder&, int32_t from) { return from; };
}

Frag literal(std::string bytes) {
  return [bytes = std::move(bytes)](NfaBuilder& b, int32_t from) {
    for (unsigned char c : bytes) {
      ByteSet s;
      s.set(c);
      const int32_t to = b.node();
      b.bytes(from, s, to);
      from = to;
    }
    return from;
  };
}

Frag special_token(std::string text) {
  return [text = std::move(text)](NfaBuilder& b, int32_t from) {
    int32_t to = b.node();
    b.special_byte(from, to);
    from = literal(text)(b, to);
    to = b.node();
    b.special_byte(from, to);
    return to;
  };
}

Frag cls(ByteSet set) {
  return [set](NfaBuilder& b, int32_t from) {
    const int32_t to = b.node();
    b.bytes(from, set, to);
    return to;
  };
}

Frag seq(std::vector<Frag> parts) {
  return [parts = std::move(parts)](NfaBuilder& b, int32_t from) {
    for (const Frag& p : parts) from = p(b, from);
    return from;
  };
}

Frag alt(std::vector<Frag> choices) {
  return [choices = std::move(choices)](NfaBuilder& b, int32_t from) {
    const int32_t end = b.node();
    for (const Frag& c : choices) {
      const int32_t start = b.node();
      b.eps(from, start);
      b.eps(c(b, start), end);
    }
    return end;
  };
}

Frag opt(Frag f) {
  return repeat(std::move(f), 0, 1);
}

Frag repeat(Frag f, int min, int max) {
  return [f = std::move(f), min, max](NfaBuilder& b, int32_t from) {
    for (int i = 0; i < min; ++i) from = f(b, from);
    const int32_t end = b.node();
    b.eps(from, end);
    if (max < 0) {
      // A fresh loop head keeps the loop's back edge away from what came before.
      const int32_t head = b.node();
      b.eps(from, head);
      b.eps(f(b, head), head);
      b.eps(head, end);
      return end;
    }
    for (int i = min; i < max; ++i) {
      from = f(b, from);
      b.eps(from, end);
    }
    return end;
  };
}

Frag call(int32_t rule) {
  return [rule](NfaBuilder& b, int32_t from) {
    const int32_t to = b.node();
    b.call(from, rule, to);
    return to;
  };
}

GrammarBuilder::GrammarBuilder(std::string error_prefix, uint64_t work_budget)
    : error_prefix_(std::move(error_prefix)), work_budget_(work_budget) {}

int32_t GrammarBuilder::declare(std::string name) {
  names_.push_back(std::move(name));
  rules_.emplace_back();
  return static_cast<int32_t>(rules_.size() - 1);
}

namespace {

struct NodeSetHash {
  size_t operator()(const std::vector<int32_t>& v) const {
    uint64_t h = 1469598103934665603ull;
    for (int32_t x : v) h = (h ^ static_cast<uint32_t>(x)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

// The coarsest partition of the bytes that no byte set of the NFA splits: bytes of one class go
// to the same places from every NFA node, so the subset construction follows classes, not bytes
// (a "." is one class, not a hundred bytes).
struct ByteClasses {
  std::array<uint16_t, 256> of{};         // byte -> class
  std::vector<uint8_t> representative;    // class -> one of its bytes
  std::vector<std::vector<uint16_t>> in;  // distinct set -> the classes it holds
  std::vector<std::vector<std::pair<int32_t, int32_t>>> edges;  // node -> (distinct set, target)

  explicit ByteClasses(const NfaBuilder& nfa) {
    std::unordered_map<ByteSet, int32_t> ids;
    std::vector<const ByteSet*> distinct;
    edges.resize(nfa.nodes.size());
    for (size_t n = 0; n < nfa.nodes.size(); ++n) {
      for (const auto& [set, to] : nfa.nodes[n].bytes) {
        auto [it, inserted] = ids.emplace(set, static_cast<int32_t>(distinct.size()));
        if (inserted) distinct.push_back(&it->first);
        edges[n].emplace_back(it->second, to);
      }
    }
    size_t count = 1;
    std::vector<int32_t> split;
    for (const ByteSet* set : distinct) {
      split.assign(count * 2, -1);
      size_t next = 0;
      for (size_t b = 0; b < 256; ++b) {
        int32_t& id = split[of[b] * 2 + (set->test(b) ? 1 : 0)];
        if (id < 0) id = static_cast<int32_t>(next++);
        of[b] = static_cast<uint16_t>(id);
      }
      count = next;
    }
    representative.assign(count, 0);
    for (int b = 255; b >= 0; --b) representative[of[static_cast<size_t>(b)]] = uint8_t(b);
    in.resize(distinct.size());
    for (size_t i = 0; i < distinct.size(); ++i) {
      for (size_t k = 0; k < count; ++k) {
        if (distinct[i]->test(representative[k])) in[i].push_back(static_cast<uint16_t>(k));
      }
    }
  }
};

}  // namespace

void GrammarBuilder::define(int32_t rule, const Frag& body, const std::string& what,
                            bool strip_empty) {
  auto spend = [&](uint64_t units) {
    work_done_ += units;
    if (work_done_ <= work_budget_) return;
    const std::string name =
        what.empty() ? "rule \"" + names_[static_cast<size_t>(rule)] + "\"" : what;
    throw FormatError(error_prefix_ + name +
                      " is too complex to compile (it exceeds the grammar compiler's work budget)");
  };
  NfaBuilder nfa;
  int32_t start = nfa.node();
  const int32_t end = body(nfa, start);
  spend(nfa.nodes.size());

  std::vector<char> mark(nfa.nodes.size() + 1, 0);
  auto closure = [&](std::vector<int32_t> set) {
    std::vector<int32_t> todo = set;
    for (int32_t n : set) mark[static_cast<size_t>(n)] = 1;
    while (!todo.empty()) {
      const int32_t n = todo.back();
      todo.pop_back();
      for (int32_t m : nfa.nodes[static_cast<size_t>(n)].eps) {
        if (!mark[static_cast<size_t>(m)]) {
          mark[static_cast<size_t>(m)] = 1;
          set.push_back(m);
          todo.push_back(m);
        }
      }
    }
    for (int32_t n : set) mark[static_cast<size_t>(n)] = 0;
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
    spend(2 * set.size());  // visited, sorted, hashed and stored
    return set;
  };

  if (strip_empty) {
    // A start that reads whatever the body's start reads but is never the end: the body's
    // strings less the empty one (calls always read a byte, as their rules are never empty).
    const std::vector<int32_t> first = closure({start});
    const int32_t fresh = nfa.node();
    for (int32_t n : first) {
      const auto bytes = nfa.nodes[static_cast<size_t>(n)].bytes;
      const auto calls = nfa.nodes[static_cast<size_t>(n)].calls;
      for (const auto& [set, to] : bytes) nfa.bytes(fresh, set, to);
      for (const CallEdge& c : calls) nfa.call(fresh, c.rule, c.ret);
    }
    start = fresh;
  }
  const ByteClasses classes(nfa);
  const size_t n_classes = classes.representative.size();

  // DFA states: sets of NFA nodes, each stored once (as the map's key; its nodes stay put).
  std::unordered_map<std::vector<int32_t>, int32_t, NodeSetHash> ids;
  std::vector<const std::vector<int32_t>*> sets;
  Dfa& dfa = rules_[static_cast<size_t>(rule)];
  dfa.nodes.clear();
  auto intern = [&](std::vector<int32_t> set) {
    auto [it, inserted] = ids.emplace(closure(std::move(set)), static_cast<int32_t>(sets.size()));
    if (inserted) {
      if (sets.size() >= kMaxRuleStates || total_states_ + sets.size() >= kMaxTotalStates) {
        too_large();
      }
      sets.push_back(&it->first);
    }
    return it->second;
  };
  intern({start});
  std::vector<std::vector<int32_t>> targets(n_classes);
  std::vector<int32_t> class_target(n_classes);
  for (size_t i = 0; i < sets.size(); ++i) {
    const std::vector<int32_t>& set = *sets[i];
    Node node;
    node.rule = rule;
    node.final = std::binary_search(set.begin(), set.end(), end);
    for (auto& t : targets) t.clear();
    std::map<int32_t, std::vector<int32_t>> calls;
    // A state costs a few microseconds besides its set (its edges, calls, maps): ~200 units.
    uint64_t steps = set.size() + 200;
    for (int32_t n : set) {
      for (const auto& [distinct, to] : classes.edges[static_cast<size_t>(n)]) {
        const auto& in = classes.in[static_cast<size_t>(distinct)];
        for (uint16_t k : in) targets[k].push_back(to);
        steps += in.size() + 1;
      }
      for (const CallEdge& c : nfa.nodes[static_cast<size_t>(n)].calls)
        calls[c.rule].push_back(c.ret);
    }
    spend(steps);
    std::unordered_map<std::vector<int32_t>, int32_t, NodeSetHash> local;
    for (size_t k = 0; k < n_classes; ++k) {
      auto& t = targets[k];
      class_target[k] = -1;
      if (t.empty()) continue;
      std::sort(t.begin(), t.end());
      t.erase(std::unique(t.begin(), t.end()), t.end());
      auto it = local.find(t);
      class_target[k] = it != local.end() ? it->second : (local[t] = intern(t));
    }
    int32_t prev = -1;
    for (int c = 0; c < 256; ++c) {
      const int32_t id = class_target[classes.of[static_cast<size_t>(c)]];
      if (id >= 0) {
        if (id == prev && node.bytes.back().hi == c - 1) {
          node.bytes.back().hi = static_cast<uint8_t>(c);
        } else {
          node.bytes.push_back({static_cast<uint8_t>(c), static_cast<uint8_t>(c), id});
        }
      }
      prev = id;
    }
    for (auto& [r, rets] : calls) node.calls.push_back({r, intern(std::move(rets))});
    dfa.nodes.push_back(std::move(node));
  }
  total_states_ += dfa.nodes.size();
  dfa.defined = true;
}

Grammar GrammarBuilder::finish(int32_t root, const std::string& recursion_error,
                               const std::string& no_string_error) {
  const size_t n_rules = rules_.size();
  for (const Dfa& d : rules_) {
    if (!d.defined) throw FormatError("internal error: a grammar rule was never defined");
  }
  // Productive rules: those whose automaton reaches an end through bytes and productive calls.
  std::vector<char> productive(n_rules, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n_rules; ++r) {
      if (productive[r]) continue;
      const auto& nodes = rules_[r].nodes;
      std::vector<char> seen(nodes.size(), 0);
      std::vector<int32_t> todo{0};
      seen[0] = 1;
      while (!todo.empty() && !productive[r]) {
        const Node& n = nodes[static_cast<size_t>(todo.back())];
        todo.pop_back();
        if (n.final) productive[r] = 1;
        auto visit = [&](int32_t t) {
          if (!seen[static_cast<size_t>(t)]) seen[static_cast<size_t>(t)] = 1, todo.push_back(t);
        };
        for (const ByteEdge& e : n.bytes) visit(e.target);
        for (const CallEdge& c : n.calls) {
          if (productive[static_cast<size_t>(c.rule)]) visit(c.ret);
        }
      }
      changed |= productive[r] != 0;
    }
  }
  if (!productive[static_cast<size_t>(root)]) {
    throw FormatError(no_string_error.empty() ? error_prefix_ + "the grammar allows no output"
                                              : no_string_error);
  }

  // Keep the nodes that are reachable from the start and can still reach an end.
  Grammar g;
  g.root = root;
  g.rule_names = names_;
  g.rule_start.assign(n_rules, -1);
  std::vector<std::vector<int32_t>> remap(n_rules);
  for (size_t r = 0; r < n_rules; ++r) {
    if (!productive[r]) continue;
    const auto& nodes = rules_[r].nodes;
    const size_t n = nodes.size();
    auto usable = [&](const CallEdge& c) { return productive[static_cast<size_t>(c.rule)] != 0; };
    std::vector<std::vector<int32_t>> rev(n);
    for (size_t i = 0; i < n; ++i) {
      for (const ByteEdge& e : nodes[i].bytes)
        rev[static_cast<size_t>(e.target)].push_back(int32_t(i));
      for (const CallEdge& c : nodes[i].calls) {
        if (usable(c)) rev[static_cast<size_t>(c.ret)].push_back(static_cast<int32_t>(i));
      }
    }
    std::vector<char> fwd(n, 0), back(n, 0);
    std::vector<int32_t> todo{0};
    fwd[0] = 1;
    while (!todo.empty()) {
      const Node& nd = nodes[static_cast<size_t>(todo.back())];
      todo.pop_back();
      auto visit = [&](int32_t t) {
        if (!fwd[static_cast<size_t>(t)]) fwd[static_cast<size_t>(t)] = 1, todo.push_back(t);
      };
      for (const ByteEdge& e : nd.bytes) visit(e.target);
      for (const CallEdge& c : nd.calls) {
        if (usable(c)) visit(c.ret);
      }
    }
    for (size_t i = 0; i < n; ++i) {
      if (nodes[i].final) back[i] = 1, todo.push_back(static_cast<int32_t>(i));
    }
    while (!todo.empty()) {
      const int32_t t = todo.back();
      todo.pop_back();
      for (int32_t p : rev[static_cast<size_t>(t)]) {
        if (!back[static_cast<size_t>(p)]) back[static_cast<size_t>(p)] = 1, todo.push_back(p);
      }
    }
    remap[r].assign(n, -1);
    for (size_t i = 0; i < n; ++i) {
      if (fwd[i] && back[i])
        remap[r][i] = static_cast<int32_t>(g.nodes.size() + 0), g.nodes.emplace_back();
    }
    g.rule_start[r] = remap[r][0];
    if (nodes[0].final)
      throw FormatError("internal error: a grammar rule matches the empty string");
  }
  for (size_t r = 0; r < n_rules; ++r) {
    if (!productive[r]) continue;
    const auto& nodes = rules_[r].nodes;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const int32_t id = remap[r][i];
      if (id < 0) continue;
      Node& out = g.nodes[static_cast<size_t>(id)];
      out.rule = static_cast<int32_t>(r);
      out.final = nodes[i].final;
      for (const ByteEdge& e : nodes[i].bytes) {
        const int32_t t = remap[r][static_cast<size_t>(e.target)];
        if (t >= 0) out.bytes.push_back({e.lo, e.hi, t});
      }
      for (const CallEdge& c : nodes[i].calls) {
        if (!productive[static_cast<size_t>(c.rule)]) continue;
        const int32_t t = remap[r][static_cast<size_t>(c.ret)];
        if (t >= 0) out.calls.push_back({c.rule, t});
      }
    }
  }

  std::map<std::tuple<bool, std::vector<int32_t>, std::string>, int32_t> shapes;
  g.shape.reserve(g.nodes.size());
  for (const Node& n : g.nodes) {
    std::vector<int32_t> callees;
    for (const CallEdge& c : n.calls) callees.push_back(c.rule);
    std::string domain(32, '\0');
    for (const ByteEdge& e : n.bytes) {
      for (int b = e.lo; b <= e.hi; ++b)
        domain[static_cast<size_t>(b / 8)] |= static_cast<char>(1 << (b % 8));
    }
    g.shape.push_back(shapes
                          .emplace(std::make_tuple(n.final, std::move(callees), std::move(domain)),
                                   static_cast<int32_t>(shapes.size()))
                          .first->second);
  }

  // A rule that calls itself (directly or not) before reading a byte would recurse forever.
  std::vector<int> state(n_rules, 0);  // 0 new, 1 on the path, 2 done
  std::function<void(size_t)> visit = [&](size_t r) {
    state[r] = 1;
    for (const CallEdge& c : g.nodes[static_cast<size_t>(g.rule_start[r])].calls) {
      const auto callee = static_cast<size_t>(c.rule);
      if (state[callee] == 1) {
        if (!recursion_error.empty()) throw FormatError(recursion_error);
        throw FormatError(error_prefix_ + "rule \"" + names_[callee] +
                          "\" refers to itself before reading anything (left recursion)");
      }
      if (state[callee] == 0) visit(callee);
    }
    state[r] = 2;
  };
  for (size_t r = 0; r < n_rules; ++r) {
    if (productive[r] && state[r] == 0) visit(r);
  }
  return g;
}

}  // namespace vkllm::sampling::grammar
