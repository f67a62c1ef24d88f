// Parser of Go's text/template grammar (text/template/parse/parse.go) into the tree of
// go_template.h, with the same checks: undefined functions and variables, break/continue outside
// range, non-executable pipeline stages.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

#include "server/prompt/go_template.h"
#include "server/prompt/go_template_lexer.h"
#include "server/prompt/go_template_literals.h"

namespace vkllm::prompt {

bool go_has_function(std::string_view name);  // go_template_funcs.cpp

std::string go_location(std::string_view source, size_t pos) {
  pos = std::min(pos, source.size());
  std::string_view text = source.substr(0, pos);
  size_t nl = text.rfind('\n');
  size_t col = nl == std::string_view::npos ? pos : pos - (nl + 1);
  size_t line = 1 + std::count(text.begin(), text.end(), '\n');
  return std::to_string(line) + ":" + std::to_string(col);
}

namespace {

constexpr int kMaxNesting = 200;

struct ParseFailure {
  size_t pos;
  std::string msg;
};

class Parser {
 public:
  Parser(std::string_view src, GoTemplate::Tree& tree) : src_(src), tree_(tree) {
    toks_ = go_lex(src);
  }

  NodePtr parse_main() {
    vars_ = {"$"};
    auto root = std::make_shared<Node>();
    root->type = NodeType::List;
    while (peek().type != Tok::Eof) {
      if (peek().type == Tok::LeftDelim) {
        size_t mark = i_;
        Token delim = next();
        if (peek_non_space().type == Tok::Define) {
          next_non_space();
          parse_definition(delim.pos);
          continue;
        }
        i_ = mark;
      }
      NodePtr n = text_or_action();
      if (!n) continue;
      if (n->type == NodeType::List && n->text == "end") fail(n->pos, "unexpected {{end}}");
      if (n->type == NodeType::List && n->text == "else") fail(n->pos, "unexpected {{else}}");
      root->nodes.push_back(n);
    }
    return root;
  }

 private:
  std::string_view src_;
  GoTemplate::Tree& tree_;
  std::vector<Token> toks_;
  size_t i_ = 0;
  std::vector<std::string> vars_;
  int range_depth_ = 0;
  int depth_ = 0;

  [[noreturn]] void fail(size_t pos, const std::string& msg) { throw ParseFailure{pos, msg}; }

  const Token& peek() {
    const Token& t = toks_[std::min(i_, toks_.size() - 1)];
    if (t.type == Tok::Error) fail(t.pos, t.val);
    return t;
  }
  Token next() {
    Token t = peek();
    if (i_ < toks_.size() - 1) ++i_;
    return t;
  }
  void backup() { --i_; }
  Token next_non_space() {
    Token t = next();
    while (t.type == Tok::Space) t = next();
    return t;
  }
  const Token& peek_non_space() {
    while (peek().type == Tok::Space) ++i_;
    return peek();
  }

  [[noreturn]] void unexpected(const Token& t, const std::string& context) {
    std::string what = t.type == Tok::Error ? t.val : tok_name(t.type);
    if (t.type != Tok::Error && t.type != Tok::Eof) what += " " + quoted(t.val);
    fail(t.pos, "unexpected " + what + " in " + context);
  }
  static std::string quoted(const std::string& s) { return "\"" + s + "\""; }

  struct Nest {
    Parser& p;
    explicit Nest(Parser& parser, size_t pos) : p(parser) {
      if (++p.depth_ > kMaxNesting) p.fail(pos, "template nesting too deep");
    }
    ~Nest() { --p.depth_; }
  };

  void parse_definition(size_t pos) {
    Token name = next_non_space();
    if (name.type != Tok::String && name.type != Tok::RawString) unexpected(name, "define clause");
    std::string n = string_value(name);
    Token rd = next_non_space();
    if (rd.type != Tok::RightDelim) unexpected(rd, "define clause");
    auto saved = vars_;
    int saved_range = range_depth_;
    vars_ = {"$"};
    range_depth_ = 0;
    auto [list, end] = item_list();
    if (end->text != "end") fail(end->pos, "unexpected {{else}} in define clause");
    vars_ = saved;
    range_depth_ = saved_range;
    (void)pos;
    add_define(n, list);
  }

  void add_define(const std::string& name, NodePtr list) {
    // Go keeps an existing non-empty definition when the new one is empty.
    auto it = tree_.defines.find(name);
    if (it != tree_.defines.end() && list->nodes.empty()) return;
    tree_.defines[name] = std::move(list);
  }

  // Parses a list up to {{end}} or {{else}}; the terminator is returned as a List node whose
  // text is "end" or "else" (pos at its delimiter).
  std::pair<std::shared_ptr<Node>, NodePtr> item_list() {
    auto list = std::make_shared<Node>();
    list->type = NodeType::List;
    list->pos = peek().pos;
    while (peek().type != Tok::Eof) {
      NodePtr n = text_or_action();
      if (!n) continue;
      if (n->type == NodeType::List && (n->text == "end" || n->text == "else")) return {list, n};
      list->nodes.push_back(n);
    }
    fail(peek().pos, "unexpected EOF");
  }

  NodePtr text_or_action() {
    Token t = next_non_space();
    switch (t.type) {
      case Tok::Text: {
        auto n = std::make_shared<Node>();
        n->type = NodeType::Text;
        n->pos = t.pos;
        n->text = t.val;
        return n;
      }
      case Tok::Comment:
        return nullptr;
      case Tok::LeftDelim:
        return action(t.pos);
      default:
        unexpected(t, "input");
    }
  }

  NodePtr marker(const char* what, size_t pos) {
    auto n = std::make_shared<Node>();
    n->type = NodeType::List;
    n->text = what;
    n->pos = pos;
    return n;
  }

  NodePtr action(size_t delim_pos) {
    Nest nest(*this, delim_pos);
    Token t = next_non_space();
    switch (t.type) {
      case Tok::Block:
        return block_control(t.pos);
      case Tok::Break:
      case Tok::Continue: {
        bool is_break = t.type == Tok::Break;
        Token rd = next_non_space();
        if (rd.type != Tok::RightDelim) unexpected(rd, is_break ? "{{break}}" : "{{continue}}");
        if (range_depth_ == 0)
          fail(t.pos, is_break ? "{{break}} outside {{range}}" : "{{continue}} outside {{range}}");
        auto n = std::make_shared<Node>();
        n->type = is_break ? NodeType::Break : NodeType::Continue;
        n->pos = t.pos;
        return n;
      }
      case Tok::Else: {
        // "else if" / "else with" continue the chain; a bare else needs "}}".
        const Token& p = peek_non_space();
        if (p.type == Tok::If || p.type == Tok::With) return marker("else", t.pos);
        Token rd = next_non_space();
        if (rd.type != Tok::RightDelim) unexpected(rd, "else");
        return marker("else", t.pos);
      }
      case Tok::End: {
        Token rd = next_non_space();
        if (rd.type != Tok::RightDelim) unexpected(rd, "end");
        return marker("end", t.pos);
      }
      case Tok::If:
        return control(NodeType::If, "if", t.pos);
      case Tok::Range:
        return control(NodeType::Range, "range", t.pos);
      case Tok::With:
        return control(NodeType::With, "with", t.pos);
      case Tok::Template:
        return template_control(t.pos);
      default:
        break;
    }
    backup();
    auto n = std::make_shared<Node>();
    n->type = NodeType::Action;
    n->pos = t.pos;
    n->pipe = pipeline("command", Tok::RightDelim);
    return n;
  }

  NodePtr control(NodeType type, const std::string& context, size_t pos) {
    size_t saved_vars = vars_.size();
    auto n = std::make_shared<Node>();
    n->type = type;
    n->pos = pos;
    n->pipe = pipeline(context, Tok::RightDelim);
    if (type == NodeType::Range) ++range_depth_;
    auto [list, term] = item_list();
    if (type == NodeType::Range) --range_depth_;
    n->list = list;
    if (term->text == "else") {
      const Token& p = peek_non_space();
      if ((type == NodeType::If && p.type == Tok::If) ||
          (type == NodeType::With && p.type == Tok::With)) {
        // {{else if ...}} is {{else}}{{if ...}} sharing the one {{end}}.
        Token kw = next();
        auto else_list = std::make_shared<Node>();
        else_list->type = NodeType::List;
        else_list->pos = kw.pos;
        Nest nest(*this, kw.pos);
        else_list->nodes.push_back(control(type, context, kw.pos));
        n->else_list = else_list;
      } else {
        auto [else_list, term2] = item_list();
        if (term2->text != "end") fail(term2->pos, "expected end; found {{else}}");
        n->else_list = else_list;
      }
    }
    vars_.resize(saved_vars);
    return n;
  }

  NodePtr template_control(size_t pos) {
    Token name = next_non_space();
    if (name.type != Tok::String && name.type != Tok::RawString)
      unexpected(name, "template clause");
    auto n = std::make_shared<Node>();
    n->type = NodeType::Template;
    n->pos = pos;
    n->text = string_value(name);
    if (next_non_space().type != Tok::RightDelim) {
      backup();
      n->pipe = pipeline("template clause", Tok::RightDelim);
    }
    return n;
  }

  NodePtr block_control(size_t pos) {
    Token name = next_non_space();
    if (name.type != Tok::String && name.type != Tok::RawString) unexpected(name, "block clause");
    auto n = std::make_shared<Node>();
    n->type = NodeType::Template;
    n->pos = pos;
    n->text = string_value(name);
    n->pipe = pipeline("block clause", Tok::RightDelim);
    auto saved = vars_;
    int saved_range = range_depth_;
    vars_ = {"$"};
    range_depth_ = 0;
    auto [list, end] = item_list();
    if (end->text != "end") fail(end->pos, "unexpected {{else}} in block clause");
    vars_ = saved;
    range_depth_ = saved_range;
    add_define(n->text, list);
    return n;
  }

  std::string string_value(const Token& t) {
    if (t.type == Tok::RawString) return t.val.substr(1, t.val.size() - 2);
    std::string out;
    if (!go_unquote(t.val, out)) fail(t.pos, "invalid syntax");
    return out;
  }

  PipePtr pipeline(const std::string& context, Tok end) {
    auto pipe = std::make_shared<Pipe>();
    pipe->pos = peek_non_space().pos;
    // Declarations: "$x :=", "$x =", "$i, $v :=" (range only).
    while (peek_non_space().type == Tok::Variable) {
      size_t mark = i_;
      Token v = next();
      Token after = peek();
      const Token& nx = peek_non_space();
      if (nx.type == Tok::Assign || nx.type == Tok::Declare) {
        pipe->is_assign = nx.type == Tok::Assign;
        next_non_space();
        pipe->decl.push_back(v.val);
        vars_.push_back(v.val);
        break;
      }
      if (nx.type == Tok::Char && nx.val == ",") {
        next_non_space();
        pipe->decl.push_back(v.val);
        vars_.push_back(v.val);
        if (context == "range" && pipe->decl.size() < 2) {
          Tok p = peek_non_space().type;
          if (p == Tok::Variable || p == Tok::RightDelim || p == Tok::RightParen) continue;
          fail(nx.pos, "range can only initialize variables");
        }
        fail(nx.pos, "too many declarations in " + context);
      }
      (void)after;
      i_ = mark;
      break;
    }
    while (true) {
      Token t = next_non_space();
      if (t.type == end) {
        check_pipeline(*pipe, context, t.pos);
        return pipe;
      }
      switch (t.type) {
        case Tok::Bool:
        case Tok::CharConstant:
        case Tok::Dot:
        case Tok::Field:
        case Tok::Identifier:
        case Tok::Number:
        case Tok::Nil:
        case Tok::RawString:
        case Tok::String:
        case Tok::Variable:
        case Tok::LeftParen:
          backup();
          pipe->cmds.push_back(command());
          break;
        default:
          unexpected(t, context);
      }
    }
  }

  void check_pipeline(const Pipe& pipe, const std::string& context, size_t pos) {
    if (pipe.cmds.empty()) fail(pos, "missing value for " + context);
    for (size_t i = 1; i < pipe.cmds.size(); ++i) {
      switch (pipe.cmds[i].args[0]->type) {
        case NodeType::Bool:
        case NodeType::Dot:
        case NodeType::Nil:
        case NodeType::Number:
        case NodeType::String:
          fail(pipe.cmds[i].pos,
               "non executable command in pipeline stage " + std::to_string(i + 1));
        default:
          break;
      }
    }
  }

  Command command() {
    Command cmd;
    cmd.pos = peek_non_space().pos;
    while (true) {
      peek_non_space();
      NodePtr op = operand();
      if (op) cmd.args.push_back(op);
      Token t = next();
      if (t.type == Tok::Space) continue;
      if (t.type == Tok::RightDelim || t.type == Tok::RightParen) {
        backup();
      } else if (t.type != Tok::Pipe) {
        unexpected(t, "operand");
      }
      break;
    }
    if (cmd.args.empty()) fail(cmd.pos, "empty command");
    return cmd;
  }

  NodePtr operand() {
    NodePtr node = term();
    if (!node) return nullptr;
    if (peek().type != Tok::Field) return node;
    std::vector<std::string> fields;
    size_t pos = peek().pos;
    while (peek().type == Tok::Field) fields.push_back(next().val.substr(1));
    switch (node->type) {
      case NodeType::Field:
      case NodeType::Variable: {
        auto n = std::make_shared<Node>(*node);
        n->ident.insert(n->ident.end(), fields.begin(), fields.end());
        return n;
      }
      case NodeType::Bool:
      case NodeType::String:
      case NodeType::Number:
      case NodeType::Nil:
      case NodeType::Dot:
        fail(pos, "unexpected . after term");
      default: {
        auto n = std::make_shared<Node>();
        n->type = NodeType::Chain;
        n->pos = pos;
        n->operand = node;
        n->ident = fields;
        return n;
      }
    }
  }

  NodePtr term() {
    Token t = next_non_space();
    auto n = std::make_shared<Node>();
    n->pos = t.pos;
    switch (t.type) {
      case Tok::Identifier:
        if (!go_has_function(t.val)) fail(t.pos, "function " + quoted(t.val) + " not defined");
        n->type = NodeType::Identifier;
        n->text = t.val;
        return n;
      case Tok::Dot:
        n->type = NodeType::Dot;
        return n;
      case Tok::Nil:
        n->type = NodeType::Nil;
        return n;
      case Tok::Variable:
        if (std::find(vars_.rbegin(), vars_.rend(), t.val) == vars_.rend())
          fail(t.pos, "undefined variable " + quoted(t.val));
        n->type = NodeType::Variable;
        n->ident = {t.val};
        return n;
      case Tok::Field:
        n->type = NodeType::Field;
        n->ident = {t.val.substr(1)};
        return n;
      case Tok::Bool:
        n->type = NodeType::Bool;
        n->boolean = t.val == "true";
        return n;
      case Tok::CharConstant:
      case Tok::Number:
        number(t, *n);
        return n;
      case Tok::LeftParen: {
        Nest nest(*this, t.pos);
        n->type = NodeType::PipeArg;
        n->pipe = pipeline("parenthesized pipeline", Tok::RightParen);
        return n;
      }
      case Tok::String:
      case Tok::RawString:
        n->type = NodeType::String;
        n->text = string_value(t);
        return n;
      default:
        backup();
        return nullptr;
    }
  }

  void number(const Token& t, Node& n) {
    n.type = NodeType::Number;
    n.text = t.val;
    if (t.type == Tok::CharConstant) {
      std::string s;
      int64_t r = 0;
      if (!go_unquote(t.val, s) || !go_single_rune(s, r))
        fail(t.pos, "malformed character constant: " + t.val);
      n.int_value = r;
      return;
    }
    const std::string& text = t.val;
    if (!text.empty() && text.back() == 'i')
      fail(t.pos, "complex constants are not supported: " + quoted(text));
    bool overflow = false;
    int64_t iv = 0;
    if (go_parse_int(text, iv, overflow)) {
      if (overflow) fail(t.pos, text + " overflows int");
      n.int_value = iv;
      n.float_value = static_cast<double>(iv);
      return;
    }
    bool hex = text.find("0x") != std::string::npos || text.find("0X") != std::string::npos;
    std::string clean;
    for (char c : text)
      if (c != '_') clean += c;
    if (clean.find_first_not_of("+-0123456789.eE") != std::string::npos && !hex)
      fail(t.pos, "illegal number syntax: " + quoted(text));
    errno = 0;
    char* end = nullptr;
    double f = std::strtod(clean.c_str(), &end);
    if (end != clean.c_str() + clean.size() || clean.empty() || errno == ERANGE)
      fail(t.pos, "illegal number syntax: " + quoted(text));
    n.float_value = f;
    n.number_is_float = true;
  }
};

// Undefined {{template}} names are reported at parse time (Go finds them only when executing).
void check_templates(const Node& n, const GoTemplate::Tree& tree) {
  if (n.type == NodeType::Template && !tree.defines.count(n.text))
    throw ParseFailure{n.pos, "no such template " + std::string("\"") + n.text + "\""};
  for (const auto& c : n.nodes) check_templates(*c, tree);
  if (n.list) check_templates(*n.list, tree);
  if (n.else_list) check_templates(*n.else_list, tree);
}

}  // namespace

GoTemplate GoTemplate::parse(std::string_view text) {
  auto tree = std::make_shared<Tree>();
  tree->source = std::string(text);
  try {
    Parser p(tree->source, *tree);
    NodePtr root = p.parse_main();
    check_templates(*root, *tree);
    for (const auto& [name, body] : tree->defines) check_templates(*body, *tree);
    return GoTemplate(tree, root);
  } catch (const ParseFailure& f) {
    throw TemplateError("template: :" + go_location(tree->source, f.pos) + ": " + f.msg);
  }
}

}  // namespace vkllm::prompt
