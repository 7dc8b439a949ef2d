#include "jinja/static_check.h"

#include <fmt/format.h>

#include "jinja/builtins.h"
#include "jinja/template_error.h"

namespace slimkv::jinja {
namespace {

void check_expr(const Expr* e, bool soft);

void check_exprs(const std::vector<ExprPtr>& es, bool soft) {
  for (const auto& e : es) check_expr(e.get(), soft);
}

void check_expr(const Expr* e, bool soft) {
  if (!e) return;
  if (e->kind == ExprKind::Cond) soft = true;
  if (!soft && e->kind == ExprKind::Filter && !is_filter_name(e->name)) {
    raise(ErrorKind::Syntax, fmt::format("No filter named '{}'. (line {})", e->name, e->line));
  }
  if (!soft && e->kind == ExprKind::Test && !is_test_name(e->name)) {
    raise(ErrorKind::Syntax, fmt::format("No test named '{}'. (line {})", e->name, e->line));
  }
  check_expr(e->a.get(), soft);
  check_expr(e->b.get(), soft);
  check_expr(e->c.get(), soft);
  check_exprs(e->args, soft);
  for (const auto& [k, v] : e->kwargs) check_expr(v.get(), soft);
}

void check_body(const Body& body, bool soft);

void check_macro(const MacroStmt& m) {
  check_exprs(m.params.defaults, false);
  check_body(m.body, false);
}

void check_stmt(const Stmt& s, bool soft) {
  switch (s.kind) {
    case StmtKind::Print: check_expr(static_cast<const PrintStmt&>(s).expr.get(), soft); break;
    case StmtKind::If: {
      const auto& st = static_cast<const IfStmt&>(s);
      for (const auto& [test, body] : st.branches) {
        check_expr(test.get(), true);
        check_body(body, true);
      }
      check_body(st.else_body, true);
      break;
    }
    case StmtKind::For: {
      const auto& f = static_cast<const ForStmt&>(s);
      check_expr(f.iter.get(), soft);
      check_expr(f.filter.get(), false);
      check_body(f.body, false);
      check_body(f.else_body, false);
      break;
    }
    case StmtKind::Set: check_expr(static_cast<const SetStmt&>(s).value.get(), soft); break;
    case StmtKind::SetBlock: {
      const auto& st = static_cast<const SetBlockStmt&>(s);
      check_expr(st.filter.get(), false);
      check_body(st.body, false);
      break;
    }
    case StmtKind::Macro: check_macro(static_cast<const MacroStmt&>(s)); break;
    case StmtKind::CallBlock: {
      const auto& c = static_cast<const CallBlockStmt&>(s);
      check_expr(c.call.get(), soft);
      check_macro(c.caller);
      break;
    }
    case StmtKind::FilterBlock: {
      const auto& fb = static_cast<const FilterBlockStmt&>(s);
      check_expr(fb.filter.get(), false);
      check_body(fb.body, false);
      break;
    }
    case StmtKind::With: {
      const auto& w = static_cast<const WithStmt&>(s);
      for (const auto& [t, e] : w.assignments) check_expr(e.get(), soft);
      check_body(w.body, false);
      break;
    }
    default: break;
  }
}

void check_body(const Body& body, bool soft) {
  for (const auto& s : body) check_stmt(*s, soft);
}

}  // namespace

void check_filter_and_test_names(const Body& body) { check_body(body, false); }

}  // namespace slimkv::jinja
