#include "server/prompt/template_inspect.h"

#include <algorithm>

namespace vkllm::prompt {

namespace {

std::string trim_space(const std::string& s) {
  const char* ws = " \t\r\n\v\f";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

bool pipe_uses_field(const Pipe& p, const std::string& field) {
  for (const auto& c : p.cmds)
    for (const auto& a : c.args) {
      if (a->type == NodeType::Field && !a->ident.empty() && a->ident[0] == field) return true;
      if (a->type == NodeType::Variable && a->ident.size() > 1 && a->ident[1] == field) return true;
      if (a->type == NodeType::PipeArg && pipe_uses_field(*a->pipe, field)) return true;
      if (a->type == NodeType::Chain && a->operand->type == NodeType::PipeArg &&
          pipe_uses_field(*a->operand->pipe, field))
        return true;
    }
  return false;
}

struct TagWalker {
  std::vector<const Node*> ancestors;
  std::string open, close;

  void on_thinking() {
    const Node* range = nullptr;
    for (auto it = ancestors.rbegin(); it != ancestors.rend(); ++it)
      if ((*it)->type == NodeType::Range) {
        range = *it;
        break;
      }
    if (!range || !pipe_uses_field(*range->pipe, "Messages")) return;
    for (auto it = ancestors.rbegin(); it != ancestors.rend(); ++it)
      if ((*it)->type == NodeType::List) {
        const Node& l = **it;
        if (l.nodes.empty()) return;
        if (l.nodes.front()->type == NodeType::Text) open = trim_space(l.nodes.front()->text);
        if (l.nodes.back()->type == NodeType::Text) close = trim_space(l.nodes.back()->text);
        return;
      }
  }

  void pipe(const Pipe* p) {
    if (!p) return;
    for (const auto& c : p->cmds)
      for (const auto& a : c.args) walk(a.get());
  }

  void walk(const Node* n) {
    if (!n) return;
    ancestors.push_back(n);
    switch (n->type) {
      case NodeType::List:
        for (const auto& c : n->nodes) walk(c.get());
        break;
      case NodeType::If:
      case NodeType::With:
      case NodeType::Range:
        pipe(n->pipe.get());
        walk(n->list.get());
        walk(n->else_list.get());
        break;
      case NodeType::Action:
      case NodeType::PipeArg:
        pipe(n->pipe.get());
        break;
      case NodeType::Chain:
        walk(n->operand.get());
        break;
      case NodeType::Field:
        if (!n->ident.empty() && n->ident[0] == "Thinking") on_thinking();
        break;
      default:
        break;
    }
    ancestors.pop_back();
  }
};

bool is_tool_calls_if(const Node& n) {
  for (const auto& c : n.pipe->cmds)
    for (const auto& a : c.args)
      if (a->type == NodeType::Field &&
          std::find(a->ident.begin(), a->ident.end(), "ToolCalls") != a->ident.end())
        return true;
  return false;
}

const Node* find_tool_call_if(const std::vector<NodePtr>& nodes) {
  for (const auto& n : nodes) {
    const Node* r = nullptr;
    switch (n->type) {
      case NodeType::If:
        if (is_tool_calls_if(*n)) return n.get();
        [[fallthrough]];
      case NodeType::Range:
      case NodeType::With:
        if ((r = find_tool_call_if(n->list->nodes))) return r;
        if (n->else_list && (r = find_tool_call_if(n->else_list->nodes))) return r;
        break;
      case NodeType::List:
        if ((r = find_tool_call_if(n->nodes))) return r;
        break;
      default:
        break;
    }
  }
  return nullptr;
}

const Node* find_text(const std::vector<NodePtr>& nodes) {
  for (const auto& n : nodes) {
    switch (n->type) {
      case NodeType::Text:
        if (trim_space(n->text).empty()) continue;
        return n.get();
      case NodeType::If: {
        if (const Node* t = find_text(n->list->nodes)) return t;
        if (n->else_list)
          if (const Node* t = find_text(n->else_list->nodes)) return t;
        return nullptr;
      }
      case NodeType::Action:
        return nullptr;
      default:
        break;
    }
  }
  return nullptr;
}

}  // namespace

void infer_thinking_tags(const GoTemplate& t, std::string& open, std::string& close) {
  TagWalker w;
  w.walk(&t.root());
  open = w.open;
  close = w.close;
}

namespace {

void append_texts(const std::vector<NodePtr>& nodes, std::string& out) {
  for (const auto& n : nodes) {
    if (n->type == NodeType::Text) out += n->text;
    if (n->list) append_texts(n->list->nodes, out);
    if (n->else_list) append_texts(n->else_list->nodes, out);
    if (n->type == NodeType::List) append_texts(n->nodes, out);
  }
}

}  // namespace

std::string tool_call_arguments_key(const GoTemplate& t) {
  const Node* tc = find_tool_call_if(t.root().nodes);
  if (!tc) return "arguments";
  std::string text;
  append_texts(tc->list->nodes, text);
  return text.find("\"parameters\"") != std::string::npos ? "parameters" : "arguments";
}

bool tool_call_name_then_args(const GoTemplate& t) {
  const Node* tc = find_tool_call_if(t.root().nodes);
  if (!tc) return false;
  std::string text;
  append_texts(tc->list->nodes, text);
  return text.find("[ARGS]") != std::string::npos;
}

std::string tool_call_tag(const GoTemplate& t) {
  const Node* tc = find_tool_call_if(t.root().nodes);
  if (!tc) return "{";
  const Node* text = find_text(tc->list->nodes);
  if (!text) return "{";
  std::string tag = text->text;
  size_t brace = tag.find('{');
  if (brace != std::string::npos) tag.resize(brace);
  tag = trim_space(tag);
  return tag.empty() ? "{" : tag;
}

}  // namespace vkllm::prompt
