// The builtin tests (`x is name(args)`), as jinja2's tests.py defines them on Python values.
#include <fmt/format.h>

#include "jinja/builtins.h"
#include "jinja/py_ops.h"
#include "jinja/py_text.h"
#include "jinja/template_error.h"
#include "jinja/utf8_text.h"

namespace slimkv::jinja {
namespace {

const char* const kFilterNames[] = {"abs", "attr", "batch", "capitalize", "center", "count", "d", "default",
                                    "dictsort", "e", "escape", "first", "float", "forceescape", "indent", "int",
                                    "items", "join", "last", "length", "list", "lower", "map", "max", "min",
                                    "reject", "rejectattr", "replace", "reverse", "round", "safe", "select",
                                    "selectattr", "sort", "string", "sum", "title", "tojson", "trim", "unique",
                                    "upper", "wordcount"};
const char* const kTestNames[] = {"defined", "undefined", "none", "boolean", "true", "false", "integer", "float",
                                  "number", "string", "mapping", "sequence", "iterable", "callable", "sameas",
                                  "escaped", "lower", "upper", "odd", "even", "divisibleby", "in", "filter", "test",
                                  "eq", "equalto", "==", "ne", "!=", "lt", "lessthan", "<", "le", "<=", "gt",
                                  "greaterthan", ">", "ge", ">="};

template <size_t N>
bool in_list(const char* const (&names)[N], const std::string& name) {
  for (const char* n : names) {
    if (name == n) return true;
  }
  return false;
}

bool same_as(const Value& a, const Value& b) {  // Python `is` for the values a template can make
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::Undefined: return false;
    case Value::Kind::None: return true;
    case Value::Kind::Bool: return a.as_bool() == b.as_bool();
    case Value::Kind::Int: return a.as_int() == b.as_int() && a.as_int() >= -5 && a.as_int() <= 256;  // small ints
    case Value::Kind::Float: return false;
    default: return a.identity() == b.identity();
  }
}

bool case_test(const Value& v, bool upper) {
  bool any = false;
  for (char32_t c : utf8_decode(py_str(v))) {  // str(value).islower()
    if (upper ? py_iscased_lower(c) : py_iscased_upper(c)) return false;
    any |= py_iscased_upper(c) || py_iscased_lower(c);
  }
  return any;
}

bool compare_test(const std::string& name, const Value& v, const Value& other) {
  if (name == "eq" || name == "equalto" || name == "==") return py_compare(v, other, "==");
  if (name == "ne" || name == "!=") return py_compare(v, other, "!=");
  if (name == "lt" || name == "lessthan" || name == "<") return py_compare(v, other, "<");
  if (name == "le" || name == "<=") return py_compare(v, other, "<=");
  if (name == "gt" || name == "greaterthan" || name == ">") return py_compare(v, other, ">");
  return py_compare(v, other, ">=");
}

}  // namespace

bool is_filter_name(const std::string& name) { return in_list(kFilterNames, name); }
bool is_test_name(const std::string& name) { return in_list(kTestNames, name); }

bool apply_test(Evaluator& ev, const std::string& name, const Value& v, const CallArgs& args) {
  ev.charge(1);
  if (!in_list(kTestNames, name)) raise(ErrorKind::Type, fmt::format("No test named '{}'.", name));
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "number") return v.is_number();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict();
  if (name == "sequence") return v.is_undefined() || v.is_string() || v.is_sequence() || v.is_dict();
  if (name == "iterable") return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
  if (name == "callable") return v.is_callable() || v.is_undefined();
  if (name == "escaped") return false;
  if (name == "lower" || name == "upper") return case_test(v, name == "upper");
  if (name == "odd" || name == "even") {
    Value r = py_binary(ev, "%", v, Value(2));
    return py_equal(r, Value(name == "odd" ? 1 : 0));
  }
  BoundArgs a(name, args, {"other"});
  const Value& other = a.required(0);
  if (name == "divisibleby") return py_equal(py_binary(ev, "%", v, other), Value(0));
  if (name == "sameas") return same_as(v, other);
  if (name == "in") return py_contains(other, v);
  if (name == "filter") return v.is_string() && in_list(kFilterNames, v.str());
  if (name == "test") return v.is_string() && in_list(kTestNames, v.str());
  return compare_test(name, v, other);
}

}  // namespace slimkv::jinja
