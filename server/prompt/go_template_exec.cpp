// Executor of the parsed tree, following text/template/exec.go: pipelines, variables with
// Go's scoping (assignment updates the innermost declared variable), range/if/with, break and
// continue, {{template}} calls, and and/or short-circuiting.
#include <algorithm>

#include "server/prompt/go_template.h"
#include "server/prompt/go_template_exec.h"

namespace vkllm::prompt {

namespace {

enum class Flow { Normal, Break, Continue };

struct Located {
  size_t pos;
  std::string context;
  std::string msg;
};

std::string node_context(const Node& n) {
  switch (n.type) {
    case NodeType::Field: {
      std::string s;
      for (const auto& f : n.ident) s += "." + f;
      return s;
    }
    case NodeType::Variable: {
      std::string s = n.ident[0];
      for (size_t i = 1; i < n.ident.size(); ++i) s += "." + n.ident[i];
      return s;
    }
    case NodeType::Identifier:
      return n.text;
    case NodeType::Dot:
      return ".";
    default:
      return "";
  }
}

class Exec {
 public:
  Exec(const GoTemplate::Tree& tree, const ExecLimits& limits) : tree_(tree), limits_(limits) {}

  void run(const Node& root, const Value& data) {
    vars_.push_back({"$", data});
    walk(data, root);
  }
  std::string take() { return std::move(out_); }

 private:
  const GoTemplate::Tree& tree_;
  const ExecLimits& limits_;
  std::string out_;
  uint64_t steps_ = 0;
  int depth_ = 0;
  int walk_depth_ = 0;
  static constexpr int kMaxWalkDepth = 1000;
  const Node* at_ = nullptr;
  std::vector<std::pair<std::string, Value>> vars_;

  [[noreturn]] void fail(const std::string& msg) {
    throw Located{at_ ? at_->pos : 0, at_ ? node_context(*at_) : "", msg};
  }
  void step(const Node& n) {
    at_ = &n;
    if (++steps_ > limits_.max_steps) fail("execution exceeded the step limit");
  }
  void write(const std::string& s) {
    if (out_.size() + s.size() > limits_.max_output) fail("output exceeds the size limit");
    out_ += s;
  }

  Value var(const std::string& name) {
    for (auto it = vars_.rbegin(); it != vars_.rend(); ++it)
      if (it->first == name) return it->second;
    fail("undefined variable: " + name);
  }
  void set_var(const std::string& name, const Value& v) {
    for (auto it = vars_.rbegin(); it != vars_.rend(); ++it)
      if (it->first == name) {
        it->second = v;
        return;
      }
    fail("undefined variable: " + name);
  }
  void set_top_var(size_t n, const Value& v) { vars_[vars_.size() - n].second = v; }

  Flow walk(const Value& dot, const Node& n) {
    step(n);
    // Bounds the C++ stack whatever the mix of nesting and {{template}} calls.
    struct Guard {
      int& d;
      ~Guard() { --d; }
    } guard{++walk_depth_};
    if (walk_depth_ > kMaxWalkDepth) fail("template nesting too deep");
    switch (n.type) {
      case NodeType::List:
        for (const auto& c : n.nodes) {
          Flow f = walk(dot, *c);
          if (f != Flow::Normal) return f;
        }
        return Flow::Normal;
      case NodeType::Text:
        write(n.text);
        return Flow::Normal;
      case NodeType::Action: {
        Value v = eval_pipeline(dot, *n.pipe);
        at_ = &n;
        if (n.pipe->decl.empty()) write(v.is_nil() ? "<no value>" : go_sprint_value(v));
        return Flow::Normal;
      }
      case NodeType::If:
      case NodeType::With:
        return walk_if_or_with(dot, n);
      case NodeType::Range:
        return walk_range(dot, n);
      case NodeType::Break:
        return Flow::Break;
      case NodeType::Continue:
        return Flow::Continue;
      case NodeType::Template: {
        auto it = tree_.defines.find(n.text);
        if (it == tree_.defines.end()) fail("no such template \"" + n.text + "\"");
        if (depth_ >= limits_.max_depth)
          fail("exceeded maximum template depth (" + std::to_string(limits_.max_depth) + ")");
        Value v = n.pipe ? eval_pipeline(dot, *n.pipe) : Value();
        auto saved = std::move(vars_);
        vars_.clear();
        vars_.push_back({"$", v});
        ++depth_;
        walk(v, *it->second);
        --depth_;
        vars_ = std::move(saved);
        return Flow::Normal;
      }
      default:
        fail("unexpected node");
    }
  }

  Flow walk_if_or_with(const Value& dot, const Node& n) {
    size_t mark = vars_.size();
    Value v = eval_pipeline(dot, *n.pipe);
    Flow f = Flow::Normal;
    if (v.truthy()) {
      f = walk(n.type == NodeType::With ? v : dot, *n.list);
    } else if (n.else_list) {
      f = walk(dot, *n.else_list);
    }
    vars_.resize(mark);
    return f;
  }

  Flow walk_range(const Value& dot, const Node& n) {
    size_t mark = vars_.size();
    const Pipe& pipe = *n.pipe;
    Value v = eval_pipeline(dot, pipe);
    at_ = &n;
    bool any = false;
    bool stop = false;
    auto one = [&](const Value& index, const Value& elem) {
      any = true;
      if (!pipe.decl.empty()) {
        if (pipe.is_assign)
          set_var(pipe.decl[0], pipe.decl.size() > 1 ? index : elem);
        else
          set_top_var(1, elem);
      }
      if (pipe.decl.size() > 1) {
        if (pipe.is_assign)
          set_var(pipe.decl[1], elem);
        else
          set_top_var(2, index);
      }
      size_t inner = vars_.size();
      Flow f = walk(elem, *n.list);
      vars_.resize(inner);
      if (f == Flow::Break) stop = true;
    };
    switch (v.kind()) {
      case Value::Kind::List: {
        Value keep = v;  // the list may be reassigned inside the body
        const auto& items = keep.as_list();
        for (size_t i = 0; i < items.size() && !stop; ++i)
          one(Value::integer(static_cast<int64_t>(i)), items[i]);
        break;
      }
      case Value::Kind::Map: {
        Value keep = v;
        for (const auto& [k, e] : keep.as_map()) {
          if (stop) break;
          one(Value::string(k), e);
        }
        break;
      }
      case Value::Kind::Int:
        if (pipe.decl.size() > 1)
          fail("can't use " + std::to_string(v.as_int()) +
               " to iterate over more than one variable");
        for (int64_t i = 0; i < v.as_int() && !stop; ++i) one(Value::integer(i), Value::integer(i));
        break;
      case Value::Kind::Nil:
        break;
      default:
        fail("range can't iterate over " + go_sprint_value(v));
    }
    Flow f = Flow::Normal;
    if (!any && n.else_list) f = walk(dot, *n.else_list);
    vars_.resize(mark);
    return f;
  }

  Value eval_pipeline(const Value& dot, const Pipe& pipe) {
    Value value;
    bool has_final = false;
    for (const auto& cmd : pipe.cmds) {
      value = eval_command(dot, cmd, has_final ? &value : nullptr);
      has_final = true;
    }
    for (const auto& name : pipe.decl) {
      if (pipe.is_assign)
        set_var(name, value);
      else
        vars_.push_back({name, value});
    }
    return value;
  }

  void not_a_function(const Command& cmd, const Value* final) {
    if (cmd.args.size() > 1 || final)
      fail("can't give argument to non-function " + node_context(*cmd.args[0]));
  }

  Value eval_command(const Value& dot, const Command& cmd, const Value* final) {
    const Node& first = *cmd.args[0];
    step(first);
    switch (first.type) {
      case NodeType::Field:
        return eval_field_chain(dot, dot, first, first.ident, 0, cmd.args, final, false);
      case NodeType::Chain: {
        if (cmd.args.size() > 1) fail("can't give argument to non-function");
        Value recv = eval_arg(dot, *first.operand);
        return eval_field_chain(dot, recv, first, first.ident, 0, cmd.args, final, true);
      }
      case NodeType::Identifier:
        return eval_function(dot, first, cmd.args, final);
      case NodeType::PipeArg:
        not_a_function(cmd, final);
        return eval_pipeline(dot, *first.pipe);
      case NodeType::Variable: {
        Value v = var(first.ident[0]);
        if (first.ident.size() == 1) {
          not_a_function(cmd, final);
          return v;
        }
        return eval_field_chain(dot, v, first, first.ident, 1, cmd.args, final, true);
      }
      default:
        break;
    }
    not_a_function(cmd, final);
    switch (first.type) {
      case NodeType::Bool:
        return Value::boolean(first.boolean);
      case NodeType::Dot:
        return dot;
      case NodeType::Nil:
        fail("nil is not a command");
      case NodeType::Number:
        return number(first);
      case NodeType::String:
        return Value::string(first.text);
      default:
        fail("can't evaluate command");
    }
  }

  static Value number(const Node& n) {
    return n.number_is_float ? Value::floating(n.float_value) : Value::integer(n.int_value);
  }

  // Fields idents[from..] applied to receiver; args/final go to the last one.
  Value eval_field_chain(const Value& dot, Value receiver, const Node& node,
                         const std::vector<std::string>& idents, size_t from,
                         const std::vector<NodePtr>& args, const Value* final, bool from_value) {
    (void)dot;
    for (size_t i = from; i < idents.size(); ++i) {
      bool last = i + 1 == idents.size();
      bool has_args = last && (args.size() > 1 || final);
      const std::string& name = idents[i];
      at_ = &node;
      if (receiver.is_nil()) {
        // A variable holding nil is an invalid value in Go: fields of it are nil too.
        if (from_value && i == from) return Value();
        fail("nil pointer evaluating interface {}." + name);
      }
      switch (receiver.kind()) {
        case Value::Kind::Struct: {
          const Value* f = receiver.field(name);
          if (!f) fail("can't evaluate field " + name + " in type " + receiver.type_name());
          if (has_args) fail(name + " has arguments but cannot be invoked as function");
          receiver = *f;
          break;
        }
        case Value::Kind::Map: {
          if (has_args) fail(name + " is not a method but has arguments");
          auto it = receiver.as_map().find(name);
          receiver = it == receiver.as_map().end() ? Value() : it->second;
          break;
        }
        default:
          fail("can't evaluate field " + name + " in type " + receiver.type_name());
      }
    }
    return receiver;
  }

  Value eval_arg(const Value& dot, const Node& n) {
    step(n);
    switch (n.type) {
      case NodeType::Dot:
        return dot;
      case NodeType::Nil:
        return Value();
      case NodeType::Field:
        return eval_field_chain(dot, dot, n, n.ident, 0, {}, nullptr, false);
      case NodeType::Variable: {
        Value v = var(n.ident[0]);
        if (n.ident.size() == 1) return v;
        return eval_field_chain(dot, v, n, n.ident, 1, {}, nullptr, true);
      }
      case NodeType::PipeArg:
        return eval_pipeline(dot, *n.pipe);
      case NodeType::Identifier: {
        std::vector<NodePtr> self;
        return eval_function(dot, n, self, nullptr);
      }
      case NodeType::Chain: {
        Value recv = eval_arg(dot, *n.operand);
        return eval_field_chain(dot, recv, n, n.ident, 0, {}, nullptr, true);
      }
      case NodeType::Bool:
        return Value::boolean(n.boolean);
      case NodeType::Number:
        return number(n);
      case NodeType::String:
        return Value::string(n.text);
      default:
        fail("can't handle argument");
    }
  }

  // args[0] is the function's own node (absent when called as a bare argument).
  Value eval_function(const Value& dot, const Node& fn, const std::vector<NodePtr>& args,
                      const Value* final) {
    const std::string& name = fn.text;
    size_t first = args.empty() ? 0 : 1;
    if (name == "and" || name == "or") {
      if (args.size() <= first && !final)
        fail("wrong number of args for " + name + ": want at least 1 got 0");
      Value v;
      for (size_t i = first; i < args.size(); ++i) {
        v = eval_arg(dot, *args[i]);
        if (v.truthy() == (name == "or")) return v;
      }
      if (final) v = *final;
      return v;
    }
    std::vector<Value> values;
    for (size_t i = first; i < args.size(); ++i) values.push_back(eval_arg(dot, *args[i]));
    if (final) values.push_back(*final);
    at_ = &fn;
    try {
      Value v = go_call_function(name, values, limits_.max_output);
      return v;
    } catch (const ExecError& e) {
      fail("error calling " + name + ": " + e.msg);
    }
  }
};

}  // namespace

std::string GoTemplate::execute(const Value& data, const ExecLimits& limits) const {
  Exec exec(*tree_, limits);
  try {
    exec.run(*root_, data);
  } catch (const Located& l) {
    throw TemplateError("template: :" + go_location(tree_->source, l.pos) +
                        ": executing \"\" at <" + l.context + ">: " + l.msg);
  }
  return exec.take();
}

}  // namespace vkllm::prompt
