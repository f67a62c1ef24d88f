#include "engine/sampling/grammar.h"

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <tuple>

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
  nodes[static_cast<size_t>(from)].bytes.emplace_back(set, to);
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

int32_t GrammarBuilder::declare(std::string name) {
  names_.push_back(std::move(name));
  rules_.emplace_back();
  return static_cast<int32_t>(rules_.size() - 1);
}

void GrammarBuilder::define(int32_t rule, const Frag& body) {
  NfaBuilder nfa;
  const int32_t start = nfa.node();
  const int32_t end = body(nfa, start);

  std::vector<char> mark(nfa.nodes.size(), 0);
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
    return set;
  };

  std::map<std::vector<int32_t>, int32_t> ids;
  std::deque<std::vector<int32_t>> sets;
  Dfa& dfa = rules_[static_cast<size_t>(rule)];
  dfa.nodes.clear();
  auto intern = [&](std::vector<int32_t> set) {
    set = closure(std::move(set));
    auto [it, inserted] = ids.emplace(set, static_cast<int32_t>(sets.size()));
    if (inserted) {
      if (sets.size() >= kMaxRuleStates || total_states_ + sets.size() >= kMaxTotalStates) {
        too_large();
      }
      sets.push_back(std::move(set));
    }
    return it->second;
  };
  intern({start});
  for (size_t i = 0; i < sets.size(); ++i) {
    const std::vector<int32_t> set = sets[i];
    Node node;
    node.rule = rule;
    node.final = std::binary_search(set.begin(), set.end(), end);
    std::array<std::vector<int32_t>, 256> targets;
    std::map<int32_t, std::vector<int32_t>> calls;
    for (int32_t n : set) {
      const auto& nn = nfa.nodes[static_cast<size_t>(n)];
      for (const auto& [bs, to] : nn.bytes) {
        for (size_t c = bs._Find_first(); c < 256; c = bs._Find_next(c)) targets[c].push_back(to);
      }
      for (const CallEdge& c : nn.calls) calls[c.rule].push_back(c.ret);
    }
    std::map<std::vector<int32_t>, int32_t> local;
    int32_t prev = -1;
    for (int c = 0; c < 256; ++c) {
      int32_t id = -1;
      if (!targets[static_cast<size_t>(c)].empty()) {
        auto& t = targets[static_cast<size_t>(c)];
        std::sort(t.begin(), t.end());
        t.erase(std::unique(t.begin(), t.end()), t.end());
        auto it = local.find(t);
        id = it != local.end() ? it->second : (local[t] = intern(t));
      }
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

Grammar GrammarBuilder::finish(int32_t root) {
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
    throw FormatError("the schema allows no value (its constraints contradict each other)");
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
        throw FormatError("the schema refers to itself (\"$ref\") without any value in between");
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
