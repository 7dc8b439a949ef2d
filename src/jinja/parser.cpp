#include "jinja/parser.h"

#include <fmt/format.h>

#include "jinja/parser_impl.h"
#include "jinja/template_error.h"

namespace slimkv::jinja {

Body parse_template(const std::vector<Token>& tokens, const ParseLimits& limits) {
  return Parser(tokens, limits).parse_all();
}

void Parser::fail(const std::string& msg) const {
  raise(ErrorKind::Syntax, fmt::format("{} (line {})", msg, cur().line));
}

std::string Parser::describe(const Token& tok) const {
  switch (tok.type) {
    case TokenType::Eof: return "end of template";
    case TokenType::BlockEnd: return "end of statement block";
    case TokenType::VarEnd: return "end of print statement";
    case TokenType::BlockBegin: return "begin of statement block";
    case TokenType::VarBegin: return "begin of print statement";
    case TokenType::Data: return "template data";
    default: return tok.value;
  }
}

void Parser::enter() {
  if (++depth_ > limits_.max_nesting) {
    fail(fmt::format("the template nests deeper than {} levels (sandbox limit)", limits_.max_nesting));
  }
}

bool Parser::skip_op(const char* op) {
  if (!is_op(op)) return false;
  next();
  return true;
}

bool Parser::skip_name(const char* n) {
  if (!is_name(n)) return false;
  next();
  return true;
}

void Parser::expect_op(const char* op) {
  if (!skip_op(op)) fail(fmt::format("expected token '{}', got '{}'", op, describe(cur())));
}

void Parser::expect_name(const char* n) {
  if (!skip_name(n)) fail(fmt::format("expected token '{}', got '{}'", n, describe(cur())));
}

std::string Parser::expect_identifier() {
  if (cur().type != TokenType::Name) fail(fmt::format("expected token 'name', got '{}'", describe(cur())));
  return next().value;
}

void Parser::expect_block_end() {
  if (cur().type != TokenType::BlockEnd) {
    fail(fmt::format("expected token 'end of statement block', got '{}'", describe(cur())));
  }
  next();
}

Body Parser::parse_all() {
  Body body = subparse({});
  if (cur().type != TokenType::Eof) fail(fmt::format("unexpected '{}'", describe(cur())));
  return body;
}

// Statements until a {% name %} whose name is one of end_names (the cursor is left on that name) or the end.
Body Parser::subparse(std::initializer_list<const char*> end_names) {
  Body body;
  while (cur().type != TokenType::Eof) {
    const Token& tok = cur();
    if (tok.type == TokenType::Data) {
      body.push_back(std::make_unique<TextStmt>(tok.line, tok.value));
      next();
    } else if (tok.type == TokenType::VarBegin) {
      next();
      auto p = std::make_unique<PrintStmt>(tok.line);
      p->expr = parse_tuple();
      if (cur().type != TokenType::VarEnd) fail(fmt::format("expected token 'end of print statement', got '{}'", describe(cur())));
      next();
      body.push_back(std::move(p));
    } else if (tok.type == TokenType::BlockBegin) {
      next();
      for (const char* e : end_names) {
        if (is_name(e)) return body;
      }
      body.push_back(parse_statement());
      expect_block_end();
    } else {
      fail(fmt::format("unexpected '{}'", describe(tok)));
    }
  }
  return body;
}

Body Parser::parse_statements(std::initializer_list<const char*> end_names, bool drop_needle) {
  skip_op(":");
  expect_block_end();
  Body body = subparse(end_names);
  if (cur().type == TokenType::Eof) {
    std::string names;
    for (const char* e : end_names) names += std::string(names.empty() ? "" : " or ") + "'" + e + "'";
    fail("Unexpected end of template. Jinja was looking for the following tags: " + names + ".");
  }
  if (drop_needle) next();
  return body;
}

StmtPtr Parser::parse_statement() {
  enter();
  if (cur().type != TokenType::Name) fail("tag name expected");
  const int line = cur().line;
  const std::string name = cur().value;
  StmtPtr s;
  if (name == "for") s = parse_for(line);
  else if (name == "if") s = parse_if(line);
  else if (name == "set") s = parse_set(line);
  else if (name == "macro") s = parse_macro(line);
  else if (name == "call") s = parse_call_block(line);
  else if (name == "filter") s = parse_filter_block(line);
  else if (name == "with") s = parse_with(line);
  else if (name == "generation") s = parse_generation(line);
  else if (name == "break" || name == "continue") {
    if (loop_depth_ == 0) fail(fmt::format("'{}' outside of a loop", name));
    next();
    s = std::make_unique<FlowStmt>(name == "break" ? StmtKind::Break : StmtKind::Continue, line);
  } else if (name == "extends" || name == "block" || name == "include" || name == "import" || name == "from" ||
             name == "autoescape" || name == "do") {
    fail(fmt::format("the '{}' tag is not supported by this engine (chat templates do not use it)", name));
  } else {
    fail(fmt::format("Encountered unknown tag '{}'.", name));
  }
  leave();
  return s;
}

StmtPtr Parser::parse_for(int line) {
  next();
  auto f = std::make_unique<ForStmt>(line);
  f->target = parse_assign_target(true, false, {"in"});
  expect_name("in");
  f->iter = parse_tuple(false, false, {"recursive"});
  if (skip_name("if")) f->filter = parse_expression();
  if (is_name("recursive")) fail("recursive loops are not supported by this engine");
  ++loop_depth_;
  f->body = parse_statements({"endfor", "else"}, false);
  --loop_depth_;
  if (next().value == "else") f->else_body = parse_statements({"endfor"}, true);
  return f;
}

StmtPtr Parser::parse_if(int line) {
  next();
  auto s = std::make_unique<IfStmt>(line);
  while (true) {
    ExprPtr test = parse_tuple(false, false);
    Body body = parse_statements({"elif", "else", "endif"}, false);
    s->branches.emplace_back(std::move(test), std::move(body));
    const std::string& which = next().value;
    if (which == "elif") continue;
    if (which == "else") s->else_body = parse_statements({"endif"}, true);
    break;
  }
  return s;
}

StmtPtr Parser::parse_set(int line) {
  next();
  Target target = parse_assign_target(true, true);
  if (skip_op("=")) {
    auto s = std::make_unique<SetStmt>(line);
    s->target = std::move(target);
    s->value = parse_tuple();
    return s;
  }
  auto s = std::make_unique<SetBlockStmt>(line);
  s->target = std::move(target);
  if (is_op("|")) s->filter = parse_filter(nullptr, false);
  s->body = parse_statements({"endset"}, true);
  return s;
}

void Parser::parse_signature(Params& params) {
  expect_op("(");
  while (!is_op(")")) {
    if (!params.names.empty()) expect_op(",");
    if (is_op(")")) break;
    std::string arg = expect_identifier();
    if (skip_op("=")) {
      params.defaults.push_back(parse_expression());
    } else if (!params.defaults.empty()) {
      fail("non-default argument follows default argument");
    }
    params.names.push_back(std::move(arg));
  }
  expect_op(")");
}

Body Parser::parse_macro_body(MacroStmt& m, const char* end_name) {
  const int saved_loops = loop_depth_;
  loop_depth_ = 0;  // break / continue cannot cross a macro
  macros_.push_back(&m);
  Body body = parse_statements({end_name}, true);
  macros_.pop_back();
  loop_depth_ = saved_loops;
  return body;
}

StmtPtr Parser::parse_macro(int line) {
  next();
  auto m = std::make_unique<MacroStmt>(line);
  m->name = expect_identifier();
  parse_signature(m->params);
  m->body = parse_macro_body(*m, "endmacro");
  return m;
}

StmtPtr Parser::parse_call_block(int line) {
  next();
  auto c = std::make_unique<CallBlockStmt>(line);
  c->caller.line = line;
  c->caller.name = "";  // jinja2: an anonymous macro
  if (is_op("(")) parse_signature(c->caller.params);
  c->call = parse_expression();
  if (c->call->kind != ExprKind::Call) fail("expected call");
  c->caller.body = parse_macro_body(c->caller, "endcall");
  return c;
}

StmtPtr Parser::parse_generation(int line) {
  next();
  auto c = std::make_unique<CallBlockStmt>(line);  // transformers' AssistantTracker: a call block around caller()
  c->caller.line = line;
  c->caller.name = "";  // jinja2: an anonymous macro
  c->caller.body = parse_macro_body(c->caller, "endgeneration");
  return c;
}

StmtPtr Parser::parse_filter_block(int line) {
  next();
  auto f = std::make_unique<FilterBlockStmt>(line);
  f->filter = parse_filter(nullptr, true);
  f->body = parse_statements({"endfilter"}, true);
  return f;
}

StmtPtr Parser::parse_with(int line) {
  next();
  auto w = std::make_unique<WithStmt>(line);
  while (cur().type != TokenType::BlockEnd) {
    if (!w->assignments.empty()) expect_op(",");
    Target t = parse_assign_target(true, false);
    expect_op("=");
    w->assignments.emplace_back(std::move(t), parse_expression());
  }
  w->body = parse_statements({"endwith"}, true);
  return w;
}

// Call arguments: positional, then keyword (name=value); a trailing comma is allowed.
void Parser::parse_call_args(Expr& call) {
  enter();
  expect_op("(");
  bool require_comma = false;
  while (!is_op(")")) {
    if (require_comma) {
      expect_op(",");
      if (is_op(")")) break;
    }
    if (is_op("*") || is_op("**")) fail("*args and **kwargs in calls are not supported by this engine");
    if (cur().type == TokenType::Name && look().type == TokenType::Operator && look().value == "=") {
      std::string key = next().value;
      next();
      call.kwargs.emplace_back(std::move(key), parse_expression());
    } else {
      if (!call.kwargs.empty()) fail("invalid syntax for function call expression");
      call.args.push_back(parse_expression());
    }
    require_comma = true;
  }
  expect_op(")");
  leave();
}

Target Parser::parse_assign_target(bool with_tuple, bool with_namespace, std::initializer_list<const char*> extra_end) {
  Target t;
  if (with_namespace && cur().type == TokenType::Name && look().type == TokenType::Operator && look().value == ".") {
    t.name = next().value;
    next();
    t.attr = expect_identifier();
    return t;
  }
  ExprPtr e = with_tuple ? parse_tuple(true, true, extra_end) : parse_primary();
  auto to_target = [&](const Expr& x, auto& self) -> Target {
    Target r;
    if (x.kind == ExprKind::Name) {
      r.name = x.name;
    } else if (x.kind == ExprKind::Tuple) {
      r.is_tuple = true;
      for (const auto& a : x.args) r.items.push_back(self(*a, self));
    } else {
      fail("can't assign to this expression");
    }
    return r;
  };
  return to_target(*e, to_target);
}

}  // namespace slimkv::jinja
