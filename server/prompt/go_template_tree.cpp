// Ollama's operations on a parsed template (template/template.go): the identifier scan that
// picks the execution mode, the appended {{ .Response }}, and the legacy-mode cut after the
// first .Response.
#include <algorithm>
#include <cctype>
#include <set>

#include "server/prompt/go_template.h"

namespace vkllm::prompt {

namespace {

void collect(const Node& n, std::vector<std::string>& out);

void collect_pipe(const Pipe& p, std::vector<std::string>& out) {
  for (const auto& c : p.cmds)
    for (const auto& a : c.args) collect(*a, out);
}

void collect(const Node& n, std::vector<std::string>& out) {
  switch (n.type) {
    case NodeType::List:
      for (const auto& c : n.nodes) collect(*c, out);
      break;
    case NodeType::Template:
    case NodeType::Action:
    case NodeType::PipeArg:
      if (n.pipe) collect_pipe(*n.pipe, out);
      break;
    case NodeType::If:
    case NodeType::Range:
    case NodeType::With:
      collect_pipe(*n.pipe, out);
      collect(*n.list, out);
      if (n.else_list) collect(*n.else_list, out);
      break;
    case NodeType::Field:
    case NodeType::Variable:
      out.insert(out.end(), n.ident.begin(), n.ident.end());
      break;
    default:
      break;
  }
}

struct Cutter {
  bool cut = false;

  bool fn(const Node& n) {
    if (n.type == NodeType::Field &&
        std::find(n.ident.begin(), n.ident.end(), "Response") != n.ident.end()) {
      cut = true;
      return false;
    }
    return cut;
  }

  PipePtr walk_pipe(const PipePtr& p) {
    if (cut) return nullptr;
    auto np = std::make_shared<Pipe>(*p);
    np->cmds.clear();
    for (const auto& c : p->cmds) {
      Command nc{c.pos, {}};
      for (const auto& a : c.args)
        if (NodePtr w = walk(a)) nc.args.push_back(w);
      if (nc.args.empty()) return nullptr;
      np->cmds.push_back(std::move(nc));
    }
    if (np->cmds.empty()) return nullptr;
    return np;
  }

  NodePtr walk(const NodePtr& n) {
    if (fn(*n)) return nullptr;
    switch (n->type) {
      case NodeType::List: {
        auto nl = std::make_shared<Node>(*n);
        nl->nodes.clear();
        for (const auto& c : n->nodes)
          if (NodePtr w = walk(c)) nl->nodes.push_back(w);
        return nl;
      }
      case NodeType::If:
      case NodeType::With:
      case NodeType::Range: {
        auto nb = std::make_shared<Node>(*n);
        NodePtr l = walk(n->list);
        nb->list = l ? l : std::make_shared<Node>();
        if (n->else_list) nb->else_list = walk(n->else_list);
        return nb;
      }
      case NodeType::Action:
      case NodeType::PipeArg: {
        PipePtr p = walk_pipe(n->pipe);
        if (!p) return nullptr;
        auto na = std::make_shared<Node>(*n);
        na->pipe = p;
        return na;
      }
      default:
        return n;
    }
  }
};

}  // namespace

std::vector<std::string> GoTemplate::identifiers() const {
  std::vector<std::string> raw;
  collect(*root_, raw);
  for (const auto& [name, body] : tree_->defines) collect(*body, raw);
  std::set<std::string> set;
  for (auto s : raw) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    set.insert(s);
  }
  return {set.begin(), set.end()};
}

bool GoTemplate::references(std::string_view lower_name) const {
  auto ids = identifiers();
  return std::find(ids.begin(), ids.end(), lower_name) != ids.end();
}

GoTemplate GoTemplate::with_response_appended() const {
  auto field = std::make_shared<Node>();
  field->type = NodeType::Field;
  field->pos = tree_->source.size();
  field->ident = {"Response"};
  auto pipe = std::make_shared<Pipe>();
  pipe->pos = field->pos;
  pipe->cmds.push_back(Command{field->pos, {field}});
  auto action = std::make_shared<Node>();
  action->type = NodeType::Action;
  action->pos = field->pos;
  action->pipe = pipe;
  auto root = std::make_shared<Node>(*root_);
  root->nodes.push_back(action);
  return GoTemplate(tree_, root);
}

GoTemplate GoTemplate::cut_after_response() const {
  Cutter c;
  NodePtr r = c.walk(root_);
  if (!r) r = std::make_shared<Node>();
  return GoTemplate(tree_, r);
}

}  // namespace vkllm::prompt
