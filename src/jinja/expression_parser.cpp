// The expression half of Parser (jinja2's parse_expression .. parse_primary, one method per precedence level).
#include <algorithm>

#include <fmt/format.h>

#include "jinja/parser_impl.h"
#include "jinja/template_error.h"

namespace slimkv::jinja {

struct DepthGuard {
  explicit DepthGuard(Parser& p) : p_(p) { p_.enter(); }
  ~DepthGuard() { p_.leave(); }
  Parser& p_;
};

ExprPtr Parser::make(ExprKind k, int line) const {
  auto e = std::make_unique<Expr>();
  e->kind = k;
  e->line = line;
  return e;
}

ExprPtr Parser::seal(ExprPtr e) const {
  int h = 0;
  for (const Expr* c : {e->a.get(), e->b.get(), e->c.get()}) {
    if (c) h = std::max(h, c->height);
  }
  for (const auto& c : e->args) h = std::max(h, c->height);
  for (const auto& [k, c] : e->kwargs) h = std::max(h, c->height);
  e->height = h + 1;
  if (e->height > 2 * limits_.max_nesting) {
    fail(fmt::format("the expression nests deeper than {} levels (sandbox limit)", 2 * limits_.max_nesting));
  }
  return e;
}

ExprPtr Parser::parse_expression(bool with_condexpr) {
  DepthGuard g(*this);
  return with_condexpr ? parse_condexpr() : parse_or();
}

bool Parser::is_tuple_end(std::initializer_list<const char*> extra_end) const {
  if (cur().type == TokenType::VarEnd || cur().type == TokenType::BlockEnd || is_op(")")) return true;
  for (const char* e : extra_end) {
    if (is_name(e)) return true;
  }
  return false;
}

ExprPtr Parser::parse_tuple(bool simplified, bool with_condexpr, std::initializer_list<const char*> extra_end,
                            bool explicit_parens) {
  DepthGuard g(*this);
  const int line = cur().line;
  std::vector<ExprPtr> args;
  bool is_tuple = false;
  while (true) {
    if (!args.empty()) expect_op(",");
    if (is_tuple_end(extra_end)) break;
    if (simplified) args.push_back(parse_postfix(parse_primary()));
    else args.push_back(parse_expression(with_condexpr));
    if (!is_op(",")) break;
    is_tuple = true;
  }
  if (!is_tuple) {
    if (!args.empty()) return std::move(args[0]);
    if (!explicit_parens) fail(fmt::format("Expected an expression, got '{}'", describe(cur())));
  }
  auto t = make(ExprKind::Tuple, line);
  t->args = std::move(args);
  return t;
}

ExprPtr Parser::parse_condexpr() {
  ExprPtr e1 = parse_or();
  while (skip_name("if")) {
    auto c = make(ExprKind::Cond, cur().line);
    c->a = parse_or();
    c->b = std::move(e1);
    if (skip_name("else")) {
      DepthGuard g(*this);
      c->c = parse_condexpr();
    }
    e1 = seal(std::move(c));
  }
  return e1;
}

namespace {
ExprPtr binary(ExprPtr a, ExprPtr b, std::string op, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = ExprKind::Binary;
  e->line = line;
  e->name = std::move(op);
  e->a = std::move(a);
  e->b = std::move(b);
  return e;
}
}  // namespace

ExprPtr Parser::parse_or() {
  ExprPtr left = parse_and();
  while (skip_name("or")) left = seal(binary(std::move(left), parse_and(), "or", cur().line));
  return left;
}

ExprPtr Parser::parse_and() {
  ExprPtr left = parse_not();
  while (skip_name("and")) left = seal(binary(std::move(left), parse_not(), "and", cur().line));
  return left;
}

ExprPtr Parser::parse_not() {
  if (is_name("not")) {
    DepthGuard g(*this);
    auto e = make(ExprKind::Unary, next().line);
    e->name = "not";
    e->a = parse_not();
    return e;
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  const int line = cur().line;
  ExprPtr expr = parse_math1();
  auto cmp = make(ExprKind::Compare, line);
  while (true) {
    static const char* ops[] = {"==", "!=", "<", "<=", ">", ">="};
    std::string op;
    for (const char* o : ops) {
      if (is_op(o)) op = o;
    }
    if (!op.empty()) {
      next();
    } else if (skip_name("in")) {
      op = "in";
    } else if (is_name("not") && look().type == TokenType::Name && look().value == "in") {
      next();
      next();
      op = "notin";
    } else {
      break;
    }
    cmp->ops.push_back(op);
    cmp->args.push_back(parse_math1());
  }
  if (cmp->ops.empty()) return expr;
  cmp->a = std::move(expr);
  return cmp;
}

ExprPtr Parser::parse_math1() {
  ExprPtr left = parse_concat();
  while (is_op("+") || is_op("-")) {
    std::string op = next().value;
    left = seal(binary(std::move(left), parse_concat(), op, cur().line));
  }
  return left;
}

ExprPtr Parser::parse_concat() {
  ExprPtr left = parse_math2();
  while (skip_op("~")) left = seal(binary(std::move(left), parse_math2(), "~", cur().line));
  return left;
}

ExprPtr Parser::parse_math2() {
  ExprPtr left = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    std::string op = next().value;
    left = seal(binary(std::move(left), parse_pow(), op, cur().line));
  }
  return left;
}

ExprPtr Parser::parse_pow() {
  ExprPtr left = parse_unary(true);
  while (skip_op("**")) left = seal(binary(std::move(left), parse_unary(true), "**", cur().line));
  return left;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  DepthGuard g(*this);
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    node = make(ExprKind::Unary, cur().line);
    node->name = next().value;
    node->a = parse_unary(false);
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  if (with_filter) node = parse_filter_expr(std::move(node));
  return node;
}

ExprPtr Parser::parse_primary() {
  DepthGuard g(*this);
  const Token& tok = cur();
  ExprPtr node;
  if (tok.type == TokenType::Name) {
    const std::string& v = tok.value;
    node = make(ExprKind::Const, tok.line);
    if (v == "true" || v == "True") node->value = Value(true);
    else if (v == "false" || v == "False") node->value = Value(false);
    else if (v == "none" || v == "None") node->value = Value::none();
    else {
      node->kind = ExprKind::Name;
      node->name = v;
      if (v == "caller" || v == "varargs" || v == "kwargs") {
        for (MacroStmt* m : macros_) {
          m->uses_caller |= v == "caller";
          m->uses_varargs |= v == "varargs";
          m->uses_kwargs |= v == "kwargs";
        }
      }
    }
    next();
  } else if (tok.type == TokenType::String) {
    std::string s;
    while (cur().type == TokenType::String) s += next().value;  // adjacent literals join
    node = make(ExprKind::Const, tok.line);
    node->value = Value(std::move(s));
  } else if (tok.type == TokenType::Integer) {
    node = make(ExprKind::Const, tok.line);
    node->value = Value(static_cast<int64_t>(std::stoll(next().value)));
  } else if (tok.type == TokenType::Float) {
    node = make(ExprKind::Const, tok.line);
    node->value = Value(std::strtod(next().value.c_str(), nullptr));
  } else if (is_op("(")) {
    next();
    node = parse_tuple(false, true, {}, true);
    expect_op(")");
  } else if (is_op("[")) {
    node = parse_list();
  } else if (is_op("{")) {
    node = parse_dict();
  } else {
    fail(fmt::format("unexpected '{}'", describe(tok)));
  }
  return node;
}

ExprPtr Parser::parse_list() {
  auto node = make(ExprKind::List, next().line);
  while (!is_op("]")) {
    if (!node->args.empty()) expect_op(",");
    if (is_op("]")) break;
    node->args.push_back(parse_expression());
  }
  expect_op("]");
  return node;
}

ExprPtr Parser::parse_dict() {
  auto node = make(ExprKind::Dict, next().line);
  while (!is_op("}")) {
    if (!node->args.empty()) expect_op(",");
    if (is_op("}")) break;
    node->args.push_back(parse_expression());
    expect_op(":");
    node->args.push_back(parse_expression());
  }
  expect_op("}");
  return node;
}

ExprPtr Parser::parse_call(ExprPtr callee) {  // at "(": callee(args)
  auto call = make(ExprKind::Call, cur().line);
  call->a = std::move(callee);
  parse_call_args(*call);
  return seal(std::move(call));
}

ExprPtr Parser::parse_postfix(ExprPtr node) {
  while (true) {
    if (is_op(".") || is_op("[")) {
      node = seal(parse_subscript(std::move(node)));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (is_op("|")) {
      node = parse_filter(std::move(node), false);
    } else if (is_name("is")) {
      node = seal(parse_test(std::move(node)));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr node) {
  DepthGuard g(*this);
  const Token& tok = next();
  if (tok.value == ".") {
    const Token& attr = next();
    if (attr.type == TokenType::Name) {
      auto e = make(ExprKind::GetAttr, tok.line);
      e->a = std::move(node);
      e->name = attr.value;
      return e;
    }
    if (attr.type != TokenType::Integer) fail("expected name or number");
    auto e = make(ExprKind::GetItem, tok.line);
    e->a = std::move(node);
    e->b = make(ExprKind::Const, tok.line);
    e->b->value = Value(static_cast<int64_t>(std::stoll(attr.value)));
    return e;
  }
  std::vector<ExprPtr> args;
  while (!is_op("]")) {
    if (!args.empty()) expect_op(",");
    args.push_back(parse_subscribed());
  }
  expect_op("]");
  auto e = make(ExprKind::GetItem, tok.line);
  e->a = std::move(node);
  if (args.size() == 1) {
    e->b = std::move(args[0]);
  } else {
    e->b = make(ExprKind::Tuple, tok.line);
    e->b->args = std::move(args);
  }
  return e;
}

ExprPtr Parser::parse_subscribed() {
  const int line = cur().line;
  ExprPtr start;
  if (!skip_op(":")) {
    start = parse_expression();
    if (!skip_op(":")) return start;
  }
  auto s = make(ExprKind::Slice, line);
  s->a = std::move(start);
  if (!is_op(":") && !is_op("]") && !is_op(",")) s->b = parse_expression();
  if (skip_op(":")) {
    if (!is_op("]") && !is_op(",")) s->c = parse_expression();
  }
  return s;
}

ExprPtr Parser::parse_filter(ExprPtr node, bool start_inline) {
  while (is_op("|") || start_inline) {
    if (!start_inline) next();
    start_inline = false;
    auto f = make(ExprKind::Filter, cur().line);
    f->name = expect_identifier();
    while (skip_op(".")) f->name += "." + expect_identifier();
    f->a = std::move(node);
    if (is_op("(")) parse_call_args(*f);
    node = seal(std::move(f));
  }
  return node;
}

ExprPtr Parser::parse_test(ExprPtr node) {
  DepthGuard g(*this);
  next();  // is
  const bool negated = skip_name("not");
  auto t = make(ExprKind::Test, cur().line);
  t->name = expect_identifier();
  while (skip_op(".")) t->name += "." + expect_identifier();
  t->a = std::move(node);
  const Token& c = cur();
  if (is_op("(")) {
    parse_call_args(*t);
  } else if ((c.type == TokenType::Name || c.type == TokenType::String || c.type == TokenType::Integer ||
              c.type == TokenType::Float || is_op("(") || is_op("[") || is_op("{")) &&
             !is_name("else") && !is_name("or") && !is_name("and")) {
    if (is_name("is")) fail("You cannot chain multiple tests with is");
    t->args.push_back(parse_postfix(parse_primary()));
  }
  if (!negated) return t;
  auto n = make(ExprKind::Unary, t->line);
  n->name = "not";
  n->a = std::move(t);
  return n;
}

}  // namespace slimkv::jinja
