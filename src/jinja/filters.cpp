// The builtin filters: jinja2's, with its argument names and defaults, plus transformers' tojson (no ASCII escaping,
// indent / separators / sort_keys). Filters jinja2 implements as generators (map, select, unique, ...) return a
// generator view (Value::view) so that truthiness, len() and printing behave as they do there.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fmt/format.h>

#include "jinja/builtins.h"
#include "jinja/filter_helpers.h"
#include "jinja/py_ops.h"
#include "jinja/py_text.h"
#include "jinja/str_methods.h"
#include "jinja/template_error.h"
#include "jinja/utf8_text.h"

namespace slimkv::jinja {
namespace {

Value f_default(Evaluator&, const Value& v, const CallArgs& args) {
  BoundArgs a("default", args, {"default_value", "boolean"});
  bool boolean = a.get_or(1, Value(false)).truthy();
  if (v.is_undefined() || (boolean && !v.truthy())) return a.get_or(0, Value(""));
  return v;
}

Value f_join(Evaluator& ev, const Value& v, const CallArgs& args) {
  BoundArgs a("join", args, {"d", "attribute"});
  std::string sep = a.get_str(0, ""), out;
  std::vector<Value> items = py_iterate(v);
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += py_str(a.has(1) && !a.get(1).is_none() ? get_attribute_path(ev, items[i], a.get(1)) : items[i]);
    ev.check_size(out.size());
  }
  ev.charge(static_cast<int64_t>(out.size()));
  return Value(std::move(out));
}

Value f_first_last(const Value& v, const CallArgs& args, bool last) {
  BoundArgs a(last ? "last" : "first", args, {});
  if (last && v.is_generator()) raise(ErrorKind::Type, std::string("'") + v.type_name() + "' object is not reversible");
  std::vector<Value> items = py_iterate(v);
  if (items.empty()) return Value::undefined(last ? "No last item, sequence was empty." : "No first item, sequence was empty.");
  return last ? items.back() : items.front();
}

Value f_tojson(Evaluator& ev, const Value& v, const CallArgs& args) {
  BoundArgs a("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions o;
  o.ensure_ascii = a.get_or(0, Value(false)).truthy();
  if (a.has(1) && !a.get(1).is_none()) {
    const Value& ind = a.get(1);
    if (ind.is_string()) o.indent = ind.str();
    else o.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(a.get_int(1, 0), 0, 1 << 16)), ' ');
  }
  if (a.has(2) && !a.get(2).is_none()) {
    const Value& sep = a.get(2);
    if (!sep.is_sequence() || sep.items().size() != 2 || !sep.items()[0].is_string() || !sep.items()[1].is_string()) {
      raise(ErrorKind::Type, "tojson: separators must be a pair of strings");
    }
    o.item_separator = sep.items()[0].str();
    o.key_separator = sep.items()[1].str();
  }
  o.sort_keys = a.get_or(3, Value(false)).truthy();
  std::string s = json_dumps(v, o);
  ev.check_size(s.size());
  ev.charge(static_cast<int64_t>(s.size()));
  return Value(std::move(s));
}

Value f_indent(Evaluator& ev, const Value& v, const CallArgs& args) {
  BoundArgs a("indent", args, {"width", "first", "blank"});
  std::string ind = a.has(0) && a.get(0).is_string() ? a.get(0).str()
                                                      : std::string(static_cast<size_t>(std::clamp<int64_t>(a.get_int(0, 4), 0, 1 << 16)), ' ');
  bool first = a.get_or(1, Value(false)).truthy(), blank = a.get_or(2, Value(false)).truthy();
  require_defined(v);
  if (!v.is_string()) raise(ErrorKind::Type, fmt::format("unsupported operand type(s) for +=: '{}' and 'str'", v.type_name()));
  std::vector<std::string> lines = py_splitlines(v.str() + "\n", false);
  std::string rv;
  ev.check_size((lines.size() + 1) * ind.size() + v.str().size());
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + ind : "") + lines[i];
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : ind + lines[i]);
  }
  if (first) rv = ind + rv;
  return Value(std::move(rv));
}

Value f_title(const Value& v) {  // jinja2's do_title: words begin after [-\s({\[<]+
  std::u32string u = utf8_decode(py_str(v));
  bool word_start = true;
  for (auto& c : u) {
    bool sep = c == '-' || py_isspace(c) || c == '(' || c == '{' || c == '[' || c == '<';
    if (sep) {
      word_start = true;
      continue;
    }
    c = word_start ? py_upper(c) : py_lower(c);
    word_start = false;
  }
  return Value(utf8_encode(u));
}

Value f_escape(const Value& v) {
  std::string out;
  for (char c : py_str(v)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return Value(std::move(out));
}

Value f_round(const Value& v, const CallArgs& args) {
  BoundArgs a("round", args, {"precision", "method"});
  int64_t prec = a.get_int(0, 0);
  std::string method = a.get_str(1, "common");
  if (method != "common" && method != "ceil" && method != "floor") {
    raise(ErrorKind::Type, "method must be common, ceil or floor");
  }
  require_defined(v);
  if (!v.is_number()) raise(ErrorKind::Type, fmt::format("type {} doesn't define __round__ method", v.type_name()));
  if (method == "common" && v.is_integral() && prec >= 0) return Value(v.as_int());
  double x = v.as_float();
  if (method != "common") {
    double scale = std::pow(10.0, static_cast<double>(prec));
    double r = method == "ceil" ? std::ceil(x * scale) : std::floor(x * scale);
    if (r == 0) r = 0.0;  // math.floor / math.ceil return an int: no negative zero
    return Value(r / scale);
  }
  if (!std::isfinite(x)) return Value(x);
  if (prec == 0) return Value(std::nearbyint(x));
  if (prec > 0 && prec <= 300) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(prec), x);  // correctly rounded, ties to even
    return Value(std::strtod(buf, nullptr));
  }
  double scale = std::pow(10.0, static_cast<double>(-prec));
  return Value(std::nearbyint(x / scale) * scale);
}

Value f_wordcount(const Value& v) {
  int64_t n = 0;
  bool in_word = false;
  for (char32_t c : utf8_decode(py_str(v))) {
    bool w = py_isalpha(c) || py_isdigit(c) || c == '_';
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value(n);
}

Value f_batch(const Value& v, const CallArgs& args) {
  BoundArgs a("batch", args, {"linecount", "fill_with"});
  int64_t n = a.get_int(0, 1);
  if (n <= 0) raise(ErrorKind::Type, "batch: linecount must be positive");
  std::vector<Value> out, tmp;
  for (const Value& item : py_iterate(v)) {
    if (static_cast<int64_t>(tmp.size()) == n) out.push_back(Value::list(std::move(tmp))), tmp.clear();
    tmp.push_back(item);
  }
  if (!tmp.empty()) {
    if (a.has(1) && !a.get(1).is_none()) {
      while (static_cast<int64_t>(tmp.size()) < n) tmp.push_back(a.get(1));
    }
    out.push_back(Value::list(std::move(tmp)));
  }
  return Value::view(std::move(out), "generator");
}

Value f_string_filter(Evaluator& ev, const std::string& name, const Value& v, const CallArgs& args) {
  if (name == "trim") {
    BoundArgs a(name, args, {"chars"});
    std::optional<std::string> chars;
    if (a.has(0) && !a.get(0).is_none()) chars = py_str(a.get(0));
    return Value(py_strip(py_str(v), chars, true, true));
  }
  if (name == "replace") {
    BoundArgs a(name, args, {"old", "new", "count"});
    return Value(py_replace(ev, py_str(v), a.get_str(0, ""), a.get_str(1, ""), a.get_int(2, -1)));
  }
  if (name == "center") {
    BoundArgs a(name, args, {"width"});
    CallArgs c;
    c.args.push_back(Value(a.get_int(0, 80)));
    return call_str_method(ev, py_str(v), "center", c);
  }
  BoundArgs a(name, args, {});
  if (name == "upper") return Value(py_upper_str(py_str(v)));
  if (name == "lower") return Value(py_lower_str(py_str(v)));
  if (name == "capitalize") return Value(py_capitalize(py_str(v)));
  if (name == "title") return f_title(v);
  if (name == "escape" || name == "e" || name == "forceescape") return f_escape(v);
  if (name == "wordcount") return f_wordcount(v);
  return Value(py_str(v));  // string, safe
}

}  // namespace

Value apply_filter(Evaluator& ev, const std::string& name, const Value& v, const CallArgs& args) {
  ev.charge(1);
  if (name == "default" || name == "d") return f_default(ev, v, args);
  if (name == "join") return f_join(ev, v, args);
  if (name == "first" || name == "last") return f_first_last(v, args, name == "last");
  if (name == "tojson") return f_tojson(ev, v, args);
  if (name == "indent") return f_indent(ev, v, args);
  if (name == "round") return f_round(v, args);
  if (name == "batch") return f_batch(v, args);
  if (name == "trim" || name == "replace" || name == "center" || name == "upper" || name == "lower" ||
      name == "capitalize" || name == "title" || name == "escape" || name == "e" || name == "forceescape" ||
      name == "wordcount" || name == "string" || name == "safe") {
    return f_string_filter(ev, name, v, args);
  }
  if (Value r; apply_sequence_filter(ev, name, v, args, r)) return r;
  if (Value r; apply_number_filter(ev, name, v, args, r)) return r;
  raise(ErrorKind::Type, fmt::format("No filter named '{}'.", name));
}

}  // namespace slimkv::jinja
