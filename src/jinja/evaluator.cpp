// Evaluator: statements, macros and the sandbox's counters (expressions are in expression_eval.cpp).
#include "jinja/evaluator.h"

#include <optional>

#include <fmt/format.h>

#include "jinja/py_ops.h"
#include "jinja/py_text.h"
#include "jinja/template_error.h"

namespace slimkv::jinja {

EvalDepth::EvalDepth(Evaluator& ev) : ev_(ev) {
  if (++ev_.eval_depth_ > ev_.opt_.limits.max_eval_depth) {
    --ev_.eval_depth_;
    raise(ErrorKind::Limit, fmt::format("evaluation nests deeper than {} levels (sandbox limit)",
                                        ev_.opt_.limits.max_eval_depth));
  }
}

Evaluator::~Evaluator() {
  for (const Value& ns : namespaces_) ns.namespace_data().items.clear();
  for (const ScopePtr& s : closures_) s->clear_chain();
}

void Evaluator::charge(int64_t units) {
  work_ += units;
  if (work_ > opt_.limits.max_work) {
    raise(ErrorKind::Limit, fmt::format("the template did more than {} steps of work (sandbox limit)", opt_.limits.max_work));
  }
}

void Evaluator::check_size(size_t bytes) {
  if (bytes > opt_.limits.max_output_bytes) {
    raise(ErrorKind::Limit, fmt::format("a value or the output would exceed {} bytes (sandbox limit)",
                                        opt_.limits.max_output_bytes));
  }
}

void Evaluator::write(const std::string& text) {
  check_size(out_->size() + text.size());
  charge(static_cast<int64_t>(text.size() / 16));
  *out_ += text;
}

std::string Evaluator::render(const Body& body, const ScopePtr& root) {
  std::string out;
  out_ = &out;
  exec(body, root);
  out_ = nullptr;
  return out;
}

std::string Evaluator::capture(const Body& body, const ScopePtr& scope, Flow* flow) {
  std::string buf;
  std::string* saved = out_;
  out_ = &buf;
  Flow f = Flow::Normal;
  try {
    f = exec(body, scope);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  if (flow) *flow = f;
  return buf;
}

Evaluator::Flow Evaluator::exec(const Body& body, const ScopePtr& scope) {
  for (const auto& s : body) {
    Flow f = exec_stmt(*s, scope);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Evaluator::Flow Evaluator::exec_stmt(const Stmt& s, const ScopePtr& scope) {
  EvalDepth depth(*this);
  charge(1);
  switch (s.kind) {
    case StmtKind::Text: write(static_cast<const TextStmt&>(s).text); break;
    case StmtKind::Print: write(py_str(eval(*static_cast<const PrintStmt&>(s).expr, scope))); break;
    case StmtKind::If: {
      Flow flow = Flow::Normal;
      exec_if(static_cast<const IfStmt&>(s), scope, flow);
      return flow;
    }
    case StmtKind::For: return exec_for(static_cast<const ForStmt&>(s), scope);
    case StmtKind::Set: {
      const auto& st = static_cast<const SetStmt&>(s);
      assign(st.target, eval(*st.value, scope), scope);
      break;
    }
    case StmtKind::SetBlock: {
      const auto& st = static_cast<const SetBlockStmt&>(s);
      Flow flow = Flow::Normal;
      Value v(capture(st.body, std::make_shared<Scope>(scope), &flow));
      if (flow != Flow::Normal) return flow;  // a break inside: nothing is assigned
      if (st.filter) v = eval_filter(*st.filter, scope, &v);
      assign(st.target, v, scope);
      break;
    }
    case StmtKind::Macro: {
      const auto& m = static_cast<const MacroStmt&>(s);
      closures_.push_back(scope);
      scope->set(m.name, Value::callable(std::make_shared<MacroCallable>(m, scope)));
      break;
    }
    case StmtKind::CallBlock: {
      const auto& c = static_cast<const CallBlockStmt&>(s);
      closures_.push_back(scope);
      Value caller = Value::callable(std::make_shared<MacroCallable>(c.caller, scope));
      if (!c.call) {  // {% generation %}: the body, rendered unchanged
        write(py_str(call(caller, {})));
        break;
      }
      Value f = eval(*c.call->a, scope);
      CallArgs args = eval_args(*c.call, scope);
      args.kwargs.emplace_back("caller", caller);
      write(py_str(call(f, args)));
      break;
    }
    case StmtKind::FilterBlock: {
      const auto& fb = static_cast<const FilterBlockStmt&>(s);
      Flow flow = Flow::Normal;
      Value v(capture(fb.body, std::make_shared<Scope>(scope), &flow));
      if (flow != Flow::Normal) return flow;  // a break inside: the block's output is dropped
      write(py_str(eval_filter(*fb.filter, scope, &v)));
      break;
    }
    case StmtKind::With: {
      const auto& w = static_cast<const WithStmt&>(s);
      auto inner = std::make_shared<Scope>(scope);
      for (const auto& [t, e] : w.assignments) assign(t, eval(*e, scope), inner);
      return exec(w.body, inner);
    }
    case StmtKind::Break: return Flow::Break;
    case StmtKind::Continue: return Flow::Continue;
  }
  return Flow::Normal;
}

void Evaluator::exec_if(const IfStmt& s, const ScopePtr& scope, Flow& flow) {
  for (const auto& [test, body] : s.branches) {
    if (eval(*test, scope).truthy()) {
      flow = exec(body, scope);
      return;
    }
  }
  flow = exec(s.else_body, scope);
}

void Evaluator::assign(const Target& t, const Value& v, const ScopePtr& scope) {
  if (!t.attr.empty()) {
    const Value* ns = scope->find(t.name);
    if (!ns || !ns->is_namespace()) raise(ErrorKind::Type, "cannot assign attribute on non-namespace object");
    ns->namespace_data().set(Value(t.attr), v);
    return;
  }
  if (!t.is_tuple) {
    scope->set(t.name, v);
    return;
  }
  std::vector<Value> items = py_iterate(v);
  if (items.size() != t.items.size()) {
    raise(ErrorKind::Type, items.size() > t.items.size()
                               ? fmt::format("too many values to unpack (expected {})", t.items.size())
                               : fmt::format("not enough values to unpack (expected {}, got {})", t.items.size(),
                                             items.size()));
  }
  for (size_t i = 0; i < items.size(); ++i) assign(t.items[i], items[i], scope);
}

namespace {
// loop.cycle(a, b, ...): the argument at index0 modulo their count.
class LoopCycle : public Callable {
 public:
  explicit LoopCycle(int64_t index0) : index0_(index0) {}
  Value call(Evaluator&, const CallArgs& args) override {
    if (args.args.empty()) raise(ErrorKind::Type, "no items for cycling given");
    return args.args[index0_ % static_cast<int64_t>(args.args.size())];
  }
  std::string describe() const override { return "<bound method LoopContext.cycle>"; }

 private:
  int64_t index0_;
};

Value loop_object(const std::vector<Value>& items, size_t i) {
  const auto n = static_cast<int64_t>(items.size());
  const auto k = static_cast<int64_t>(i);
  DictData d;
  d.items.reserve(12);
  d.items.emplace_back(Value("index"), Value(k + 1));
  d.items.emplace_back(Value("index0"), Value(k));
  d.items.emplace_back(Value("revindex"), Value(n - k));
  d.items.emplace_back(Value("revindex0"), Value(n - k - 1));
  d.items.emplace_back(Value("first"), Value(k == 0));
  d.items.emplace_back(Value("last"), Value(k == n - 1));
  d.items.emplace_back(Value("length"), Value(n));
  d.items.emplace_back(Value("depth"), Value(1));
  d.items.emplace_back(Value("depth0"), Value(0));
  d.items.emplace_back(Value("previtem"), k > 0 ? items[i - 1] : Value::undefined("there is no previous item"));
  d.items.emplace_back(Value("nextitem"), k + 1 < n ? items[i + 1] : Value::undefined("there is no next item"));
  d.items.emplace_back(Value("cycle"), Value::callable(std::make_shared<LoopCycle>(k)));
  return Value::dict(std::move(d));
}
}  // namespace

Evaluator::Flow Evaluator::exec_for(const ForStmt& f, const ScopePtr& scope) {
  std::vector<Value> items = py_iterate(eval(*f.iter, scope));
  charge(static_cast<int64_t>(items.size()));
  if (f.filter) {
    std::vector<Value> kept;
    for (const Value& item : items) {
      auto s = std::make_shared<Scope>(scope);
      assign(f.target, item, s);
      if (eval(*f.filter, s).truthy()) kept.push_back(item);
    }
    items = std::move(kept);
  }
  // jinja2 runs the else block unless an iteration reached the end of the body (a `continue` or `break` in every
  // iteration so far leaves it to run).
  bool completed = false;
  for (size_t i = 0; i < items.size(); ++i) {
    if (++iterations_ > opt_.limits.max_loop_iterations) {
      raise(ErrorKind::Limit, fmt::format("more than {} loop iterations (sandbox limit)", opt_.limits.max_loop_iterations));
    }
    auto s = std::make_shared<Scope>(scope);
    assign(f.target, items[i], s);
    s->set("loop", loop_object(items, i));
    Flow flow = exec(f.body, s);
    if (flow == Flow::Break) break;
    completed |= flow == Flow::Normal;
  }
  if (!completed && !f.else_body.empty()) exec(f.else_body, std::make_shared<Scope>(scope));
  return Flow::Normal;
}

Value Evaluator::call_macro(const MacroStmt& m, const ScopePtr& closure, const CallArgs& call_args) {
  if (++call_depth_ > opt_.limits.max_call_depth) {
    --call_depth_;
    raise(ErrorKind::Limit, fmt::format("macro calls nest deeper than {} (sandbox limit)", opt_.limits.max_call_depth));
  }
  struct Leave {
    int& d;
    ~Leave() { --d; }
  } leave{call_depth_};
  const auto& names = m.params.names;
  const std::string shown = m.name.empty() ? "None" : "'" + m.name + "'";  // jinja2's {name!r}
  auto s = std::make_shared<Scope>(closure);
  std::vector<std::pair<std::string, Value>> kwargs = call_args.kwargs;
  auto take_kwarg = [&](const std::string& name) -> std::optional<Value> {
    for (auto it = kwargs.begin(); it != kwargs.end(); ++it) {
      if (it->first == name) {
        Value v = it->second;
        kwargs.erase(it);
        return v;
      }
    }
    return std::nullopt;
  };
  const size_t first_default = names.size() - m.params.defaults.size();
  for (size_t i = 0; i < names.size(); ++i) {
    std::optional<Value> v;
    if (i < call_args.args.size()) v = call_args.args[i];
    else v = take_kwarg(names[i]);
    if (!v && i >= first_default) v = eval(*m.params.defaults[i - first_default], s);
    s->set(names[i], v ? *v : Value::undefined(fmt::format("parameter '{}' was not provided", names[i])));
  }
  if (m.uses_caller) {
    auto c = take_kwarg("caller");
    s->set("caller", c ? *c : Value::undefined("No caller defined"));
  }
  if (m.uses_kwargs) {
    DictData d;
    for (auto& [k, v] : kwargs) d.items.emplace_back(Value(k), v);
    s->set("kwargs", Value::dict(std::move(d)));
  } else if (!kwargs.empty()) {
    raise(ErrorKind::Type, fmt::format("macro {} takes no keyword argument '{}'", shown, kwargs.front().first));
  }
  if (m.uses_varargs) {
    std::vector<Value> rest;
    for (size_t i = names.size(); i < call_args.args.size(); ++i) rest.push_back(call_args.args[i]);
    s->set("varargs", Value::list(std::move(rest), true));
  } else if (call_args.args.size() > names.size()) {
    raise(ErrorKind::Type, fmt::format("macro {} takes not more than {} argument(s)", shown, names.size()));
  }
  return Value(capture(m.body, s));
}

}  // namespace slimkv::jinja
