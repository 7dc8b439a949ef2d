// Lexer: template source -> tokens, as jinja2's lexer with trim_blocks and lstrip_blocks (transformers' settings):
// text, {{ }}, {% %}, {# #} (dropped), {% raw %}, whitespace control (-, +), bracket balancing inside tags.
// Must not know: the grammar of statements or expressions (parser.h).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace slimkv::jinja {

enum class TokenType {
  Data,        // template text
  VarBegin,    // {{
  VarEnd,      // }}
  BlockBegin,  // {%
  BlockEnd,    // %}
  Name,
  String,      // value: the unescaped text
  Integer,     // value: decimal digits (base prefixes already converted)
  Float,       // value: the literal without '_'
  Operator,    // value: the operator text (+, //, ==, [, ...)
  Eof,
};

struct Token {
  TokenType type;
  std::string value;
  int line = 1;
};

struct LexerOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

// Throws TemplateError (Syntax) on an unterminated tag, comment or string, an unbalanced bracket or a stray char.
std::vector<Token> tokenize(std::string_view source, const LexerOptions& opt = {});

}  // namespace slimkv::jinja
