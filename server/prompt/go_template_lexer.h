// Tokens of Go's text/template lexer (text/template/parse/lex.go), produced all at once.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace vkllm::prompt {

enum class Tok {
  Error,
  Eof,
  Text,
  Comment,
  LeftDelim,
  RightDelim,
  Space,
  Identifier,
  Field,
  Variable,
  Dot,
  String,
  RawString,
  CharConstant,
  Number,
  Bool,
  Nil,
  Pipe,
  Declare,
  Assign,
  LeftParen,
  RightParen,
  Char,
  // keywords
  Block,
  Break,
  Continue,
  Define,
  Else,
  End,
  If,
  Range,
  Template,
  With,
};

struct Token {
  Tok type = Tok::Eof;
  size_t pos = 0;
  std::string val;  // raw text of the token (error text for Error)
};

// Lexes the whole input; the last token is Eof or Error.
std::vector<Token> go_lex(std::string_view input);
const char* tok_name(Tok t);

}  // namespace vkllm::prompt
