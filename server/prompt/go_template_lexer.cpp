#include "server/prompt/go_template_lexer.h"

#include <cctype>

namespace vkllm::prompt {

namespace {

bool is_template_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}
bool is_alnum(char c) {
  // Bytes >= 0x80 belong to Unicode letters in practice (identifiers such as $größe).
  return c == '_' || std::isalnum(static_cast<unsigned char>(c)) ||
         static_cast<unsigned char>(c) >= 0x80;
}

class Lexer {
 public:
  explicit Lexer(std::string_view in) : in_(in) {}

  std::vector<Token> run() {
    while (!done_) lex_text();
    return std::move(out_);
  }

 private:
  std::string_view in_;
  size_t pos_ = 0;
  int paren_depth_ = 0;
  bool done_ = false;
  std::vector<Token> out_;

  void emit(Tok t, size_t start, size_t end) {
    out_.push_back(Token{t, start, std::string(in_.substr(start, end - start))});
  }
  void error(std::string msg) {
    out_.push_back(Token{Tok::Error, pos_, std::move(msg)});
    done_ = true;
  }
  bool starts(size_t at, std::string_view s) const { return in_.substr(at).starts_with(s); }
  char at(size_t i) const { return i < in_.size() ? in_[i] : '\0'; }

  bool left_trim_marker(size_t after_delim) const {
    return at(after_delim) == '-' && after_delim + 1 < in_.size() &&
           is_template_space(in_[after_delim + 1]);
  }
  // At " -}}" (trim) or "}}".
  bool at_right_delim(bool& trim) const {
    if (pos_ + 1 < in_.size() && is_template_space(in_[pos_]) && in_[pos_ + 1] == '-' &&
        starts(pos_ + 2, "}}")) {
      trim = true;
      return true;
    }
    trim = false;
    return starts(pos_, "}}");
  }
  void skip_leading_space() {
    while (pos_ < in_.size() && is_template_space(in_[pos_])) ++pos_;
  }

  void lex_text() {
    size_t x = in_.find("{{", pos_);
    if (x == std::string_view::npos) {
      if (pos_ < in_.size()) emit(Tok::Text, pos_, in_.size());
      out_.push_back(Token{Tok::Eof, in_.size(), ""});
      done_ = true;
      return;
    }
    size_t end = x;
    bool trim = left_trim_marker(x + 2);
    if (trim)
      while (end > pos_ && is_template_space(in_[end - 1])) --end;
    if (end > pos_) emit(Tok::Text, pos_, end);
    pos_ = x;
    lex_left_delim(trim);
  }

  void lex_left_delim(bool trim) {
    size_t start = pos_;
    pos_ += 2;
    size_t after = trim ? 2 : 0;
    if (starts(pos_ + after, "/*")) {
      pos_ += after;
      lex_comment(start);
      return;
    }
    emit(Tok::LeftDelim, start, pos_);
    pos_ += after;
    paren_depth_ = 0;
    lex_inside_action();
  }

  void lex_comment(size_t start) {
    pos_ += 2;
    size_t x = in_.find("*/", pos_);
    if (x == std::string_view::npos) {
      error("unclosed comment");
      return;
    }
    pos_ = x + 2;
    bool trim = false;
    if (!at_right_delim(trim)) {
      error("comment ends before closing delimiter");
      return;
    }
    pos_ += trim ? 4 : 2;
    emit(Tok::Comment, start, pos_);
    if (trim) skip_leading_space();
  }

  void lex_right_delim(bool trim) {
    size_t start = pos_;
    pos_ += trim ? 4 : 2;
    emit(Tok::RightDelim, start, pos_);
    if (trim) skip_leading_space();
  }

  void lex_inside_action() {
    while (!done_) {
      bool trim = false;
      if (at_right_delim(trim)) {
        if (paren_depth_ == 0) {
          lex_right_delim(trim);
          return;
        }
        error("unclosed left paren");
        return;
      }
      if (pos_ >= in_.size()) {
        error("unclosed action");
        return;
      }
      char c = in_[pos_];
      size_t start = pos_;
      if (is_template_space(c)) {
        size_t n = 0;
        while (pos_ < in_.size() && is_template_space(in_[pos_])) {
          ++pos_;
          ++n;
        }
        // A space right before "-}}" belongs to the trim marker.
        if (at(pos_) == '-' && starts(pos_ + 1, "}}")) {
          --pos_;
          if (n == 1) continue;
        }
        emit(Tok::Space, start, pos_);
      } else if (c == '=') {
        ++pos_;
        emit(Tok::Assign, start, pos_);
      } else if (c == ':') {
        if (at(pos_ + 1) != '=') {
          error("expected :=");
          return;
        }
        pos_ += 2;
        emit(Tok::Declare, start, pos_);
      } else if (c == '|') {
        ++pos_;
        emit(Tok::Pipe, start, pos_);
      } else if (c == '"') {
        lex_quote();
      } else if (c == '`') {
        size_t x = in_.find('`', pos_ + 1);
        if (x == std::string_view::npos) {
          error("unterminated raw quoted string");
          return;
        }
        pos_ = x + 1;
        emit(Tok::RawString, start, pos_);
      } else if (c == '\'') {
        lex_char();
      } else if (c == '$') {
        ++pos_;
        while (pos_ < in_.size() && is_alnum(in_[pos_])) ++pos_;
        if (!at_terminator()) {
          error("bad character in variable");
          return;
        }
        emit(Tok::Variable, start, pos_);
      } else if (c == '.') {
        if (std::isdigit(static_cast<unsigned char>(at(pos_ + 1)))) {
          lex_number();
        } else {
          ++pos_;
          if (pos_ < in_.size() && is_alnum(in_[pos_])) {
            while (pos_ < in_.size() && is_alnum(in_[pos_])) ++pos_;
            if (!at_terminator()) {
              error("bad character in field");
              return;
            }
            emit(Tok::Field, start, pos_);
          } else {
            emit(Tok::Dot, start, pos_);
          }
        }
      } else if (c == '+' || c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
        lex_number();
      } else if (is_alnum(c)) {
        lex_identifier();
      } else if (c == '(') {
        ++pos_;
        ++paren_depth_;
        emit(Tok::LeftParen, start, pos_);
      } else if (c == ')') {
        ++pos_;
        if (--paren_depth_ < 0) {
          error("unexpected right paren");
          return;
        }
        emit(Tok::RightParen, start, pos_);
      } else if (static_cast<unsigned char>(c) < 0x7f &&
                 std::isprint(static_cast<unsigned char>(c))) {
        ++pos_;
        emit(Tok::Char, start, pos_);
      } else {
        error("unrecognized character in action");
        return;
      }
    }
  }

  bool at_terminator() const {
    if (pos_ >= in_.size()) return true;
    char c = in_[pos_];
    return is_template_space(c) || c == '.' || c == ',' || c == '|' || c == ':' || c == ')' ||
           c == '(' || c == '}';
  }

  void lex_identifier() {
    size_t start = pos_;
    while (pos_ < in_.size() && is_alnum(in_[pos_])) ++pos_;
    if (!at_terminator()) {
      error("bad character in identifier");
      return;
    }
    std::string_view w = in_.substr(start, pos_ - start);
    static const std::pair<std::string_view, Tok> keywords[] = {{"block", Tok::Block},
                                                                {"break", Tok::Break},
                                                                {"continue", Tok::Continue},
                                                                {"define", Tok::Define},
                                                                {"else", Tok::Else},
                                                                {"end", Tok::End},
                                                                {"if", Tok::If},
                                                                {"range", Tok::Range},
                                                                {"nil", Tok::Nil},
                                                                {"template", Tok::Template},
                                                                {"with", Tok::With},
                                                                {"true", Tok::Bool},
                                                                {"false", Tok::Bool}};
    for (const auto& [k, t] : keywords)
      if (w == k) {
        emit(t, start, pos_);
        return;
      }
    emit(Tok::Identifier, start, pos_);
  }

  void lex_quote() {
    size_t start = pos_++;
    while (true) {
      if (pos_ >= in_.size() || in_[pos_] == '\n') {
        error("unterminated quoted string");
        return;
      }
      char c = in_[pos_++];
      if (c == '\\') {
        if (pos_ >= in_.size() || in_[pos_] == '\n') {
          error("unterminated quoted string");
          return;
        }
        ++pos_;
      } else if (c == '"') {
        break;
      }
    }
    emit(Tok::String, start, pos_);
  }

  void lex_char() {
    size_t start = pos_++;
    while (true) {
      if (pos_ >= in_.size() || in_[pos_] == '\n') {
        error("unterminated character constant");
        return;
      }
      char c = in_[pos_++];
      if (c == '\\') {
        if (pos_ >= in_.size() || in_[pos_] == '\n') {
          error("unterminated character constant");
          return;
        }
        ++pos_;
      } else if (c == '\'') {
        break;
      }
    }
    emit(Tok::CharConstant, start, pos_);
  }

  void lex_number() {
    size_t start = pos_;
    if (at(pos_) == '+' || at(pos_) == '-') ++pos_;
    // Digits, base prefixes, separators, fraction, exponent: validated by the parser.
    while (pos_ < in_.size()) {
      char c = in_[pos_];
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.') {
        ++pos_;
      } else if ((c == '+' || c == '-') && pos_ > start &&
                 (in_[pos_ - 1] == 'e' || in_[pos_ - 1] == 'E' || in_[pos_ - 1] == 'p' ||
                  in_[pos_ - 1] == 'P')) {
        ++pos_;
      } else {
        break;
      }
    }
    if (pos_ == start + 1 && (in_[start] == '+' || in_[start] == '-')) {
      error("bad number syntax: " + std::string(in_.substr(start, pos_ - start)));
      return;
    }
    emit(Tok::Number, start, pos_);
  }
};

}  // namespace

std::vector<Token> go_lex(std::string_view input) {
  return Lexer(input).run();
}

const char* tok_name(Tok t) {
  switch (t) {
    case Tok::Error:
      return "error";
    case Tok::Eof:
      return "EOF";
    case Tok::Text:
      return "text";
    case Tok::Comment:
      return "comment";
    case Tok::LeftDelim:
      return "\"{{\"";
    case Tok::RightDelim:
      return "\"}}\"";
    case Tok::Space:
      return "space";
    case Tok::Identifier:
      return "identifier";
    case Tok::Field:
      return "field";
    case Tok::Variable:
      return "variable";
    case Tok::Dot:
      return "\".\"";
    case Tok::String:
      return "string";
    case Tok::RawString:
      return "raw string";
    case Tok::CharConstant:
      return "character constant";
    case Tok::Number:
      return "number";
    case Tok::Bool:
      return "bool";
    case Tok::Nil:
      return "nil";
    case Tok::Pipe:
      return "\"|\"";
    case Tok::Declare:
      return "\":=\"";
    case Tok::Assign:
      return "\"=\"";
    case Tok::LeftParen:
      return "\"(\"";
    case Tok::RightParen:
      return "\")\"";
    case Tok::Char:
      return "character";
    case Tok::Block:
      return "<block>";
    case Tok::Break:
      return "<break>";
    case Tok::Continue:
      return "<continue>";
    case Tok::Define:
      return "<define>";
    case Tok::Else:
      return "<else>";
    case Tok::End:
      return "<end>";
    case Tok::If:
      return "<if>";
    case Tok::Range:
      return "<range>";
    case Tok::Template:
      return "<template>";
    case Tok::With:
      return "<with>";
  }
  return "?";
}

}  // namespace vkllm::prompt
