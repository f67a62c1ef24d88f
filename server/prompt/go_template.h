// Go text/template (option missingkey=zero) with Ollama's functions, as compat §5.1 describes:
// parse once into an immutable tree, execute many times against a Value. Errors are
// TemplateError with Go-like "template: :LINE:COL: ..." text; hostile templates are bounded in
// nesting depth, execution steps and output size instead of crashing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/prompt/go_value.h"
#include "server/prompt/prompt.h"

namespace vkllm::prompt {

struct Node;
using NodePtr = std::shared_ptr<const Node>;

struct Command {
  size_t pos = 0;
  std::vector<NodePtr> args;
};

struct Pipe {
  size_t pos = 0;
  bool is_assign = false;         // `$x = ...` rather than `$x := ...`
  std::vector<std::string> decl;  // declared/assigned variables ("$x")
  std::vector<Command> cmds;
};
using PipePtr = std::shared_ptr<const Pipe>;

enum class NodeType {
  // statements
  List,
  Text,
  Action,
  If,
  Range,
  With,
  Template,
  Break,
  Continue,
  // operands
  Field,
  Variable,
  Dot,
  Nil,
  Bool,
  Number,
  String,
  Identifier,
  Chain,
  PipeArg,
};

struct Node {
  NodeType type = NodeType::List;
  size_t pos = 0;
  std::string text;                // Text bytes, String value, Identifier, Template name
  std::vector<std::string> ident;  // Field: names; Variable: "$x" then names; Chain: names
  PipePtr pipe;                    // Action, If/Range/With, Template (may be null), PipeArg
  NodePtr list, else_list;         // If/Range/With bodies (else_list may be null)
  std::vector<NodePtr> nodes;      // List children
  NodePtr operand;                 // Chain: the term the fields apply to
  bool boolean = false;            // Bool
  bool number_is_float = false;    // Number evaluates as float64 (has . e p), else int
  int64_t int_value = 0;
  double float_value = 0;
};

struct ExecLimits {
  size_t max_output = 64u << 20;    // bytes written or built as one string
  uint64_t max_steps = 20'000'000;  // nodes evaluated
  int max_depth = 100;              // nested {{template}} calls
};

class GoTemplate {
 public:
  // Parses text; throws TemplateError.
  static GoTemplate parse(std::string_view text);

  // Executes against data ($ and the initial dot); throws TemplateError.
  std::string execute(const Value& data, const ExecLimits& limits = {}) const;

  // Field and variable identifiers referenced anywhere (Ollama's Template.Vars), lower-cased.
  std::vector<std::string> identifiers() const;
  bool references(std::string_view lower_name) const;
  // A copy with `{{ .Response }}` appended to the main template.
  GoTemplate with_response_appended() const;
  // Ollama's legacy-mode cut: everything after the first `.Response` field dropped.
  GoTemplate cut_after_response() const;

  const Node& root() const { return *root_; }
  const std::string& source() const { return tree_->source; }

  struct Tree {
    std::string source;
    std::map<std::string, NodePtr> defines;  // {{define}} / {{block}} templates
  };

 private:
  GoTemplate(std::shared_ptr<const Tree> tree, NodePtr root)
      : tree_(std::move(tree)), root_(std::move(root)) {}
  std::shared_ptr<const Tree> tree_;
  NodePtr root_;
};

// "LINE:COL" of a byte offset, as Go's ErrorContext (column counted in bytes from 0).
std::string go_location(std::string_view source, size_t pos);

}  // namespace vkllm::prompt
