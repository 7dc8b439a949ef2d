// Evaluator: expressions — names, literals, attribute and item access (the sandbox's door: only data and the
// whitelisted methods), calls, filters, tests, operators.
#include <fmt/format.h>

#include "jinja/builtins.h"
#include "jinja/evaluator.h"
#include "jinja/py_ops.h"
#include "jinja/py_text.h"
#include "jinja/template_error.h"

namespace slimkv::jinja {

namespace {
// jinja2's object_type_repr: how an undefined value's message names the object it came from.
std::string object_type_repr(const Value& obj) {
  if (obj.is_none()) return "None";
  return std::string(obj.type_name()) + " object";
}
}  // namespace

Value Evaluator::getattr(const Value& obj, const std::string& name) {
  require_defined(obj);
  if (has_method(obj, name)) return bound_method(obj, name);
  if (obj.is_dict() || obj.is_namespace()) {
    if (const Value* v = obj.dict().find(name)) return *v;
  }
  return Value::undefined(fmt::format("'{}' has no attribute '{}'", object_type_repr(obj), name));
}

Value Evaluator::getitem(const Value& obj, const Value& key) {
  require_defined(obj);
  if ((obj.is_sequence() || obj.is_string()) && key.is_integral()) {
    if (auto v = py_index(obj, key.as_int())) return *v;
  } else if (obj.is_dict() || (obj.is_namespace() && key.is_string())) {
    if (const Value* v = obj.dict().find(key)) return *v;
  }
  if (key.is_string()) {
    if (has_method(obj, key.str())) return bound_method(obj, key.str());
    return Value::undefined(fmt::format("'{}' has no attribute '{}'", object_type_repr(obj), key.str()));
  }
  return Value::undefined(fmt::format("'{}' has no element {}", object_type_repr(obj), py_repr(key)));
}

Value Evaluator::call(const Value& f, const CallArgs& args) {
  require_defined(f);
  if (!f.is_callable()) raise(ErrorKind::Type, fmt::format("'{}' object is not callable", f.type_name()));
  return f.callable().call(*this, args);
}

CallArgs Evaluator::eval_args(const Expr& e, const ScopePtr& scope) {
  CallArgs args;
  args.args.reserve(e.args.size());
  for (const auto& a : e.args) args.args.push_back(eval(*a, scope));
  for (const auto& [k, v] : e.kwargs) args.kwargs.emplace_back(k, eval(*v, scope));
  return args;
}

Value Evaluator::eval_call(const Expr& e, const ScopePtr& scope) {
  if (e.a->kind == ExprKind::GetAttr) {  // obj.method(...): no bound-method object on the way
    Value obj = eval(*e.a->a, scope);
    require_defined(obj);
    if (has_method(obj, e.a->name)) return call_method(*this, obj, e.a->name, eval_args(e, scope));
    Value f = getattr(obj, e.a->name);
    return call(f, eval_args(e, scope));
  }
  Value f = eval(*e.a, scope);
  return call(f, eval_args(e, scope));
}

Value Evaluator::eval_filter(const Expr& e, const ScopePtr& scope, const Value* operand) {
  Value v = e.a ? eval_filter_operand(e, scope, operand) : (operand ? *operand : Value());
  return apply_filter(*this, e.name, v, eval_args(e, scope));
}

Value Evaluator::eval_filter_operand(const Expr& e, const ScopePtr& scope, const Value* operand) {
  // In a filter block's chain (f | g), the innermost filter's operand is the block's text.
  if (operand && e.a->kind == ExprKind::Filter) return eval_filter(*e.a, scope, operand);
  return eval(*e.a, scope);
}

// Slices bypass jinja2's getitem (its compiler writes obj[a:b:c] as Python): errors are raised, not undefined.
Value Evaluator::eval_slice(const Value& obj, const Expr& sl, const ScopePtr& scope) {
  std::optional<int64_t> idx[3];
  const Expr* parts[3] = {sl.a.get(), sl.b.get(), sl.c.get()};
  bool ok = true;
  for (int i = 0; i < 3; ++i) {
    if (!parts[i]) continue;
    Value v = eval(*parts[i], scope);
    if (v.is_integral()) idx[i] = v.as_int();
    else if (!v.is_none()) ok = false;
  }
  require_defined(obj);
  if (obj.is_dict()) raise(ErrorKind::Type, "unhashable type: 'slice'");
  if (!(obj.is_sequence() || obj.is_string())) {
    raise(ErrorKind::Type, fmt::format("'{}' object is not subscriptable", obj.type_name()));
  }
  if (!ok) raise(ErrorKind::Type, "slice indices must be integers or None or have an __index__ method");
  return py_slice(*this, obj, idx[0], idx[1], idx[2]);
}

Value Evaluator::eval_compare(const Expr& e, const ScopePtr& scope) {
  Value left = eval(*e.a, scope);
  for (size_t i = 0; i < e.ops.size(); ++i) {
    Value right = eval(*e.args[i], scope);
    const std::string& op = e.ops[i];
    bool r;
    if (op == "in") r = py_contains(right, left);
    else if (op == "notin") r = !py_contains(right, left);
    else r = py_compare(left, right, op);
    if (!r) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

Value Evaluator::eval_binary(const Expr& e, const ScopePtr& scope) {
  if (e.name == "and") {
    Value a = eval(*e.a, scope);
    return a.truthy() ? eval(*e.b, scope) : a;
  }
  if (e.name == "or") {
    Value a = eval(*e.a, scope);
    return a.truthy() ? a : eval(*e.b, scope);
  }
  Value a = eval(*e.a, scope);
  Value b = eval(*e.b, scope);
  if (e.name == "~") {
    std::string x = py_str(a), y = py_str(b);
    check_size(x.size() + y.size());
    charge(static_cast<int64_t>(x.size() + y.size()));
    return Value(x + y);
  }
  return py_binary(*this, e.name, a, b);
}

Value Evaluator::eval(const Expr& e, const ScopePtr& scope) {
  EvalDepth depth(*this);
  charge(1);
  switch (e.kind) {
    case ExprKind::Const: return e.value;
    case ExprKind::Name: {
      const Value* v = scope->find(e.name);
      return v ? *v : Value::undefined(fmt::format("'{}' is undefined", e.name));
    }
    case ExprKind::List:
    case ExprKind::Tuple: {
      std::vector<Value> items;
      items.reserve(e.args.size());
      for (const auto& a : e.args) items.push_back(eval(*a, scope));
      return Value::list(std::move(items), e.kind == ExprKind::Tuple);
    }
    case ExprKind::Dict: {
      DictData d;
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        Value k = eval(*e.args[i], scope);
        if (!py_hashable(k)) raise(ErrorKind::Type, std::string("unhashable type: '") + k.type_name() + "'");
        d.set(std::move(k), eval(*e.args[i + 1], scope));
      }
      return Value::dict(std::move(d));
    }
    case ExprKind::GetAttr: return getattr(eval(*e.a, scope), e.name);
    case ExprKind::GetItem: {
      Value obj = eval(*e.a, scope);
      if (e.b->kind == ExprKind::Slice) return eval_slice(obj, *e.b, scope);
      return getitem(obj, eval(*e.b, scope));
    }
    case ExprKind::Slice: raise(ErrorKind::Syntax, "a slice outside of []");
    case ExprKind::Call: return eval_call(e, scope);
    case ExprKind::Filter: return eval_filter(e, scope, nullptr);
    case ExprKind::Test: return Value(apply_test(*this, e.name, eval(*e.a, scope), eval_args(e, scope)));
    case ExprKind::Unary: {
      Value v = eval(*e.a, scope);
      if (e.name == "not") return Value(!v.truthy());
      return py_negate(v, e.name == "-");
    }
    case ExprKind::Binary: return eval_binary(e, scope);
    case ExprKind::Compare: return eval_compare(e, scope);
    case ExprKind::Cond: {
      if (eval(*e.a, scope).truthy()) return eval(*e.b, scope);
      if (e.c) return eval(*e.c, scope);
      return Value::undefined(fmt::format(
          "the inline if-expression on line {} evaluated to false and no else section was defined.", e.line));
    }
  }
  return Value();
}

}  // namespace slimkv::jinja
