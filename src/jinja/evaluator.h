// Evaluator: runs a parsed template over a root scope — statements (evaluator.cpp), expressions
// (expression_eval.cpp), macros — and enforces the sandbox: attribute access only to data and the whitelisted
// methods, bounded loop iterations, call depth, evaluation depth, output size and work.
// Must not know: the source text or tokens; the builtin filters, tests and methods live in their own files.
#pragma once
#include <memory>
#include <string>

#include "jinja/ast.h"
#include "jinja/options.h"
#include "jinja/scope.h"

namespace slimkv::jinja {

class Evaluator {
 public:
  explicit Evaluator(const Options& opt) : opt_(opt) {}
  ~Evaluator();  // clears the render's macro scopes and namespaces (no reference cycle outlives it)
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  std::string render(const Body& body, const ScopePtr& root);

  // For the builtins.
  Value call(const Value& f, const CallArgs& args);
  Value call_macro(const MacroStmt& m, const ScopePtr& closure, const CallArgs& args);
  void track_namespace(const Value& ns) { namespaces_.push_back(ns); }
  void charge(int64_t units);        // work budget
  void check_size(size_t bytes);     // a string or list about to be built
  const Options& options() const { return opt_; }

  // Python semantics used by filters too.
  Value getattr(const Value& obj, const std::string& name);
  Value getitem(const Value& obj, const Value& key);

 private:
  enum class Flow { Normal, Break, Continue };
  const Options& opt_;
  std::string* out_ = nullptr;
  int64_t iterations_ = 0;
  int64_t work_ = 0;
  int call_depth_ = 0;
  int eval_depth_ = 0;
  std::vector<ScopePtr> closures_;  // scopes macros were defined in
  std::vector<Value> namespaces_;

  friend struct EvalDepth;

  Flow exec(const Body& body, const ScopePtr& scope);
  Flow exec_stmt(const Stmt& s, const ScopePtr& scope);
  Flow exec_for(const ForStmt& f, const ScopePtr& scope);
  void exec_if(const IfStmt& s, const ScopePtr& scope, Flow& flow);
  void assign(const Target& t, const Value& v, const ScopePtr& scope);
  // The body's output; flow is set when a break / continue left it (jinja2 renders these bodies inline).
  std::string capture(const Body& body, const ScopePtr& scope, Flow* flow = nullptr);
  void write(const std::string& text);

  Value eval(const Expr& e, const ScopePtr& scope);
  Value eval_call(const Expr& e, const ScopePtr& scope);
  Value eval_binary(const Expr& e, const ScopePtr& scope);
  Value eval_compare(const Expr& e, const ScopePtr& scope);
  Value eval_filter(const Expr& e, const ScopePtr& scope, const Value* operand);
  Value eval_filter_operand(const Expr& e, const ScopePtr& scope, const Value* operand);
  Value eval_slice(const Value& obj, const Expr& slice, const ScopePtr& scope);
  CallArgs eval_args(const Expr& e, const ScopePtr& scope);
};

// Counts one level of statement / expression nesting against Limits::max_eval_depth.
struct EvalDepth {
  explicit EvalDepth(Evaluator& ev);
  ~EvalDepth() { --ev_.eval_depth_; }
  Evaluator& ev_;
};

// A macro value: its definition and the scope it was defined in (names resolve there at call time).
class MacroCallable : public Callable {
 public:
  MacroCallable(const MacroStmt& def, ScopePtr closure) : def_(def), closure_(std::move(closure)) {}
  Value call(Evaluator& ev, const CallArgs& args) override { return ev.call_macro(def_, closure_, args); }
  std::string describe() const override {
    return def_.name.empty() ? "<Macro anonymous>" : "<Macro '" + def_.name + "'>";
  }

 private:
  const MacroStmt& def_;
  ScopePtr closure_;
};

}  // namespace slimkv::jinja
