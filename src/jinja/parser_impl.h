// Internal to the parser (parser.cpp: statements, expression_parser.cpp: expressions): the token cursor and the
// recursive-descent methods, mirroring jinja2's Parser method by method.
// Must not know: evaluation. Not included outside src/jinja/parser*.cpp and expression_parser.cpp.
#pragma once
#include <initializer_list>
#include <string>
#include <vector>

#include "jinja/parser.h"

namespace slimkv::jinja {

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, const ParseLimits& limits) : t_(tokens), limits_(limits) {}
  Body parse_all();

  // Expressions (expression_parser.cpp).
  ExprPtr parse_expression(bool with_condexpr = true);
  ExprPtr parse_tuple(bool simplified = false, bool with_condexpr = true,
                      std::initializer_list<const char*> extra_end = {}, bool explicit_parens = false);
  ExprPtr parse_filter(ExprPtr node, bool start_inline);
  void parse_call_args(Expr& call);
  Target parse_assign_target(bool with_tuple, bool with_namespace, std::initializer_list<const char*> extra_end = {});

 private:
  const std::vector<Token>& t_;
  ParseLimits limits_;
  size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
  std::vector<MacroStmt*> macros_;  // the macros being parsed (references to caller/varargs/kwargs flag them)

  friend struct DepthGuard;

  // Token cursor.
  const Token& cur() const { return t_[i_]; }
  const Token& look() const { return t_[i_ + 1 < t_.size() ? i_ + 1 : i_]; }
  const Token& next() { return t_[i_ < t_.size() - 1 ? i_++ : i_]; }
  bool is_op(const char* op) const { return cur().type == TokenType::Operator && cur().value == op; }
  bool is_name(const char* n) const { return cur().type == TokenType::Name && cur().value == n; }
  bool skip_op(const char* op);
  bool skip_name(const char* n);
  void expect_op(const char* op);
  void expect_name(const char* n);
  std::string expect_identifier();
  void expect_block_end();
  [[noreturn]] void fail(const std::string& msg) const;
  std::string describe(const Token& tok) const;
  void enter();  // nesting bound
  void leave() { --depth_; }

  // Statements (parser.cpp).
  Body subparse(std::initializer_list<const char*> end_names);
  Body parse_statements(std::initializer_list<const char*> end_names, bool drop_needle);
  StmtPtr parse_statement();
  StmtPtr parse_for(int line);
  StmtPtr parse_if(int line);
  StmtPtr parse_set(int line);
  StmtPtr parse_macro(int line);
  StmtPtr parse_call_block(int line);
  StmtPtr parse_filter_block(int line);
  StmtPtr parse_with(int line);
  StmtPtr parse_generation(int line);
  void parse_signature(Params& params);
  Body parse_macro_body(MacroStmt& m, const char* end_name);

  // Expression levels (expression_parser.cpp).
  ExprPtr parse_condexpr();
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_call(ExprPtr callee);
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_subscribed();
  ExprPtr parse_test(ExprPtr node);
  ExprPtr parse_list();
  ExprPtr parse_dict();
  ExprPtr make(ExprKind k, int line) const;
  ExprPtr seal(ExprPtr e) const;  // sets e->height; a chain (a + b + ..., x.a.b..., x | f | g ...) may not grow past the bound
  bool is_tuple_end(std::initializer_list<const char*> extra_end) const;
};

}  // namespace slimkv::jinja
