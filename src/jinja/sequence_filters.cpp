#include <algorithm>
#include <fmt/format.h>

#include "jinja/builtins.h"
#include "jinja/filter_helpers.h"
#include "jinja/py_ops.h"
#include "jinja/py_text.h"
#include "jinja/str_methods.h"
#include "jinja/template_error.h"
#include "jinja/utf8_text.h"

namespace slimkv::jinja {

Value get_attribute_path(Evaluator& ev, const Value& item, const Value& attribute) {
  if (!attribute.is_string()) return ev.getitem(item, attribute);
  Value cur = item;
  const std::string& path = attribute.str();
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    cur = ev.getitem(cur, digits && part.size() < 18 ? Value(static_cast<int64_t>(std::stoll(part))) : Value(part));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

namespace {

Value ignore_case(const Value& v) { return v.is_string() ? Value(py_lower_str(v.str())) : v; }

// select / reject / selectattr / rejectattr: jinja2's select_or_reject (an empty or false value yields nothing).
Value select_filter(Evaluator& ev, const std::string& name, const Value& v, const CallArgs& args) {
  const bool attr = name == "selectattr" || name == "rejectattr";
  const bool keep_if = name == "select" || name == "selectattr";
  std::vector<Value> out;
  if (v.truthy()) {
    size_t off = 0;
    if (attr && args.args.empty()) raise(ErrorKind::Type, "Missing parameter for attribute name");
    if (attr) off = 1;
    CallArgs test_args;
    test_args.args.assign(args.args.begin() + std::min(args.args.size(), off + 1), args.args.end());
    test_args.kwargs = args.kwargs;
    for (const Value& item : py_iterate(v)) {
      Value x = attr ? get_attribute_path(ev, item, args.args[0]) : item;
      bool r = args.args.size() > off ? apply_test(ev, py_str(args.args[off]), x, test_args) : x.truthy();
      if (r == keep_if) out.push_back(item);
    }
  }
  return Value::view(std::move(out), "generator");
}

Value map_filter(Evaluator& ev, const Value& v, const CallArgs& args) {
  std::vector<Value> out;
  if (!v.truthy()) return Value::view(std::move(out), "generator");
  if (args.args.empty() && args.kwarg("attribute")) {
    const Value attribute = *args.kwarg("attribute");
    const Value* dflt = args.kwarg("default");
    for (const auto& [k, x] : args.kwargs) {
      if (k != "attribute" && k != "default") raise(ErrorKind::Type, fmt::format("Unexpected keyword argument '{}'", k));
    }
    for (const Value& item : py_iterate(v)) {
      Value r = get_attribute_path(ev, item, attribute);
      out.push_back(r.is_undefined() && dflt && !dflt->is_none() ? *dflt : r);
    }
    return Value::view(std::move(out), "generator");
  }
  if (args.args.empty()) raise(ErrorKind::Type, "map requires a filter argument");
  CallArgs fargs;
  fargs.args.assign(args.args.begin() + 1, args.args.end());
  fargs.kwargs = args.kwargs;
  const std::string fname = py_str(args.args[0]);
  for (const Value& item : py_iterate(v)) out.push_back(apply_filter(ev, fname, item, fargs));
  return Value::view(std::move(out), "generator");
}

// sort, unique, min, max: keys through an attribute path and case folding.
Value keyed(Evaluator& ev, const Value& item, const BoundArgs& a, size_t case_i, size_t attr_i) {
  Value k = a.has(attr_i) && !a.get(attr_i).is_none() ? get_attribute_path(ev, item, a.get(attr_i)) : item;
  return a.get_or(case_i, Value(false)).truthy() ? k : ignore_case(k);
}

Value sort_filter(Evaluator& ev, const Value& v, const CallArgs& args) {
  BoundArgs a("sort", args, {"reverse", "case_sensitive", "attribute"});
  std::vector<std::pair<Value, Value>> keyed_items;
  for (const Value& item : py_iterate(v)) keyed_items.emplace_back(keyed(ev, item, a, 1, 2), item);
  ev.charge(static_cast<int64_t>(keyed_items.size()) * 8);
  const bool rev = a.get_or(0, Value(false)).truthy();
  // jinja2's sort keys are one-element lists: equal keys (even undefined ones) compare by == and never by <.
  auto less = [](const Value& x, const Value& y) { return !py_equal(x, y) && py_less(x, y); };
  std::stable_sort(keyed_items.begin(), keyed_items.end(), [&](const auto& x, const auto& y) {
    return rev ? less(y.first, x.first) : less(x.first, y.first);
  });
  std::vector<Value> out;
  for (auto& [k, item] : keyed_items) out.push_back(std::move(item));
  return Value::list(std::move(out));
}

Value dictsort_filter(Evaluator& ev, const Value& v, const CallArgs& args) {
  BoundArgs a("dictsort", args, {"case_sensitive", "by", "reverse"});
  std::string by = a.get_str(1, "key");
  if (by != "key" && by != "value") raise(ErrorKind::Type, "You can only sort by either \"key\" or \"value\"");
  if (!v.is_dict()) raise(ErrorKind::Type, fmt::format("'{}' object has no attribute 'items'", v.type_name()));
  std::vector<Value> items;
  for (const auto& [k, x] : v.dict().items) items.push_back(Value::list({k, x}, true));
  const size_t pos = by == "key" ? 0 : 1;
  const bool cs = a.get_or(0, Value(false)).truthy(), rev = a.get_or(2, Value(false)).truthy();
  auto key = [&](const Value& t) { return cs ? t.items()[pos] : ignore_case(t.items()[pos]); };
  ev.charge(static_cast<int64_t>(items.size()) * 8);
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    return rev ? py_less(key(y), key(x)) : py_less(key(x), key(y));
  });
  return Value::list(std::move(items));
}

Value unique_filter(Evaluator& ev, const Value& v, const CallArgs& args) {
  BoundArgs a("unique", args, {"case_sensitive", "attribute"});
  std::vector<Value> seen, out;
  for (const Value& item : py_iterate(v)) {
    Value k = keyed(ev, item, a, 0, 1);
    if (!py_hashable(k)) raise(ErrorKind::Type, "unhashable type: 'list'");
    ev.charge(static_cast<int64_t>(seen.size()));
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return py_equal(s, k); })) continue;
    seen.push_back(k);
    out.push_back(item);
  }
  return Value::view(std::move(out), "generator");
}

Value min_max_filter(Evaluator& ev, const std::string& name, const Value& v, const CallArgs& args) {
  BoundArgs a(name, args, {"case_sensitive", "attribute"});
  std::vector<Value> items = py_iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  Value best_key = keyed(ev, items[0], a, 0, 1);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = keyed(ev, items[i], a, 0, 1);
    if (name == "min" ? py_less(k, best_key) : py_less(best_key, k)) best = i, best_key = k;
  }
  return items[best];
}

Value sum_filter(Evaluator& ev, const Value& v, const CallArgs& args) {
  BoundArgs a("sum", args, {"attribute", "start"});
  Value total = a.get_or(1, Value(0));
  for (const Value& item : py_iterate(v)) {
    Value x = a.has(0) && !a.get(0).is_none() ? get_attribute_path(ev, item, a.get(0)) : item;
    if (x.is_string()) raise(ErrorKind::Type, "unsupported operand type(s) for +: 'int' and 'str'");
    total = py_binary(ev, "+", total, x);
  }
  return total;
}

Value reverse_filter(const Value& v) {
  if (v.is_string()) {
    std::u32string u = utf8_decode(v.str());
    std::reverse(u.begin(), u.end());
    return Value(utf8_encode(u));
  }
  if (v.is_generator()) raise(ErrorKind::Type, "argument must be iterable");
  std::vector<Value> items = py_iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::view(std::move(items), "generator");
}

}  // namespace

bool apply_sequence_filter(Evaluator& ev, const std::string& name, const Value& v, const CallArgs& args, Value& out) {
  if (name == "length" || name == "count") {
    BoundArgs a(name, args, {});
    out = Value(py_len(v));
  } else if (name == "list") {
    BoundArgs a(name, args, {});
    out = Value::list(py_iterate(v));
  } else if (name == "map") {
    out = map_filter(ev, v, args);
  } else if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") {
    out = select_filter(ev, name, v, args);
  } else if (name == "unique") {
    out = unique_filter(ev, v, args);
  } else if (name == "sort") {
    out = sort_filter(ev, v, args);
  } else if (name == "dictsort") {
    out = dictsort_filter(ev, v, args);
  } else if (name == "items") {
    BoundArgs a(name, args, {});
    std::vector<Value> pairs;
    if (!v.is_undefined()) {
      if (!v.is_dict()) raise(ErrorKind::Type, "Can only get item pairs from a mapping.");
      for (const auto& [k, x] : v.dict().items) pairs.push_back(Value::list({k, x}, true));
    }
    out = Value::view(std::move(pairs), "generator");
  } else if (name == "reverse") {
    BoundArgs a(name, args, {});
    out = reverse_filter(v);
  } else if (name == "min" || name == "max") {
    out = min_max_filter(ev, name, v, args);
  } else if (name == "sum") {
    out = sum_filter(ev, v, args);
  } else if (name == "attr") {
    BoundArgs a(name, args, {"name"});
    std::string attr = a.get_str(0, "");
    require_defined(v);
    if (has_method(v, attr)) out = bound_method(v, attr);
    else if (v.is_namespace() && v.dict().find(attr)) out = *v.dict().find(attr);
    else out = Value::undefined(fmt::format("'{}' object has no attribute '{}'", v.type_name(), attr));
  } else {
    return false;
  }
  return true;
}

}  // namespace slimkv::jinja
