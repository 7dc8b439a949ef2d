// The syntax tree the parser builds and the evaluator walks: expressions (one node type, the kind says which fields
// mean what) and statements (one struct per tag). Plain data; the tree is immutable once parsed.
// Must not know: how anything is evaluated, or the token stream.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/value.h"

namespace slimkv::jinja {

enum class ExprKind {
  Const,     // value
  Name,      // name
  List,      // args: the elements
  Tuple,     // args
  Dict,      // args: key, value, key, value, ...
  GetAttr,   // a.name
  GetItem,   // a[b]
  Slice,     // a, b, c: start, stop, step (each may be null); only as GetItem's b
  Call,      // a(args, kwargs)
  Filter,    // a | name(args, kwargs); a is null in a filter block's chain head
  Test,      // a is name(args, kwargs)
  Unary,     // name: "-", "+" or "not"; a
  Binary,    // name: + - * / // % ** ~ and or; a, b
  Compare,   // a, then ops[i] against args[i] (chained like Python: a < b < c)
  Cond,      // b if a else c (c may be null: undefined)
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind;
  int line = 0;
  Value value;
  std::string name;
  ExprPtr a, b, c;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
  int height = 1;  // of the subtree (Parser::seal bounds it: evaluation and destruction recurse on it)
};

// An assignment target: a name, a namespace attribute (name.attr, set only) or a tuple of targets.
struct Target {
  std::string name;
  std::string attr;
  std::vector<Target> items;
  bool is_tuple = false;
};

enum class StmtKind { Text, Print, If, For, Set, SetBlock, Macro, CallBlock, FilterBlock, With, Break, Continue };

struct Stmt {
  explicit Stmt(StmtKind k, int l) : kind(k), line(l) {}
  virtual ~Stmt() = default;
  StmtKind kind;
  int line;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct TextStmt : Stmt {
  TextStmt(int l, std::string t) : Stmt(StmtKind::Text, l), text(std::move(t)) {}
  std::string text;
};

struct PrintStmt : Stmt {
  explicit PrintStmt(int l) : Stmt(StmtKind::Print, l) {}
  ExprPtr expr;
};

struct IfStmt : Stmt {
  explicit IfStmt(int l) : Stmt(StmtKind::If, l) {}
  std::vector<std::pair<ExprPtr, Body>> branches;  // if, elif...
  Body else_body;
};

struct ForStmt : Stmt {
  explicit ForStmt(int l) : Stmt(StmtKind::For, l) {}
  Target target;
  ExprPtr iter;
  ExprPtr filter;  // for x in xs if cond
  Body body;
  Body else_body;
};

struct SetStmt : Stmt {
  explicit SetStmt(int l) : Stmt(StmtKind::Set, l) {}
  Target target;
  ExprPtr value;
};

struct SetBlockStmt : Stmt {
  explicit SetBlockStmt(int l) : Stmt(StmtKind::SetBlock, l) {}
  Target target;
  ExprPtr filter;  // {% set x | f %}: a Filter chain whose innermost operand is null
  Body body;
};

// Macro parameters: names, and default expressions for the last defaults.size() of them.
struct Params {
  std::vector<std::string> names;
  std::vector<ExprPtr> defaults;
};

struct MacroStmt : Stmt {
  explicit MacroStmt(int l) : Stmt(StmtKind::Macro, l) {}
  std::string name;
  Params params;
  Body body;
  bool uses_caller = false, uses_varargs = false, uses_kwargs = false;
};

struct CallBlockStmt : Stmt {
  explicit CallBlockStmt(int l) : Stmt(StmtKind::CallBlock, l) {}
  ExprPtr call;   // a Call expression
  MacroStmt caller{0};  // the body as the macro `caller`
};

struct FilterBlockStmt : Stmt {
  explicit FilterBlockStmt(int l) : Stmt(StmtKind::FilterBlock, l) {}
  ExprPtr filter;  // a Filter chain whose innermost operand is null
  Body body;
};

struct WithStmt : Stmt {
  explicit WithStmt(int l) : Stmt(StmtKind::With, l) {}
  std::vector<std::pair<Target, ExprPtr>> assignments;
  Body body;
};

struct FlowStmt : Stmt {  // break / continue
  FlowStmt(StmtKind k, int l) : Stmt(k, l) {}
};

}  // namespace slimkv::jinja
