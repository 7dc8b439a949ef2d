// int, float and abs: Python's int(str, base) / float(str) parsing (whitespace, signs, '_' between digits, inf /
// nan), with jinja2's fallbacks ("42.23"|int is 42; what does not parse is the default).
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>

#include "jinja/builtins.h"
#include "jinja/filter_helpers.h"
#include "jinja/py_ops.h"
#include "jinja/str_methods.h"
#include "jinja/template_error.h"

namespace slimkv::jinja {
namespace {

// Removes '_' that sit between two digits; returns false when an '_' is anywhere else.
bool strip_underscores(const std::string& s, std::string& out, bool hex) {
  auto digit = [&](char c) { return hex ? std::isxdigit(static_cast<unsigned char>(c)) != 0 : (c >= '0' && c <= '9'); };
  out.clear();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '_') {
      out.push_back(s[i]);
      continue;
    }
    if (i == 0 || i + 1 >= s.size() || !digit(s[i - 1]) || !digit(s[i + 1])) return false;
  }
  return true;
}

std::optional<int64_t> parse_py_int(const std::string& text, int64_t base) {
  std::string s = py_strip(text, std::nullopt, true, true);
  bool neg = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) neg = s[0] == '-', s = s.substr(1);
  auto lower2 = [&](size_t i) { return static_cast<char>(std::tolower(static_cast<unsigned char>(s[i]))); };
  if (s.size() > 2 && s[0] == '0') {
    char p = lower2(1);
    int64_t pb = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
    if (pb && (base == 0 || base == pb)) {
      base = pb;
      s = s.substr(2);
      if (!s.empty() && s[0] == '_') s = s.substr(1);
    }
  }
  if (base == 0) base = 10;
  if (base < 2 || base > 36 || s.empty()) return std::nullopt;
  std::string digits;
  if (!strip_underscores(s, digits, base > 10)) return std::nullopt;
  unsigned __int128 v = 0;
  for (char c : digits) {
    int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
            : std::isalpha(static_cast<unsigned char>(c)) ? std::tolower(static_cast<unsigned char>(c)) - 'a' + 10 : 99;
    if (d >= base) return std::nullopt;
    v = v * base + d;
    if (v > static_cast<unsigned __int128>(INT64_MAX)) raise(ErrorKind::Type, "integer overflow (the engine's ints are 64-bit)");
  }
  auto r = static_cast<int64_t>(v);
  return neg ? -r : r;
}

std::optional<double> parse_py_float(const std::string& text) {
  std::string s = py_strip(text, std::nullopt, true, true), body;
  std::string low;
  for (char c : s) low.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  std::string unsigned_low = (!low.empty() && (low[0] == '+' || low[0] == '-')) ? low.substr(1) : low;
  const double sign = (!low.empty() && low[0] == '-') ? -1.0 : 1.0;
  if (unsigned_low == "inf" || unsigned_low == "infinity") return sign * HUGE_VAL;
  if (unsigned_low == "nan") return std::nan("");
  if (!strip_underscores(s, body, false)) return std::nullopt;
  // Python's grammar: [sign] (digits [. [digits]] | . digits) [e [sign] digits]
  size_t i = 0, n = body.size();
  if (i < n && (body[i] == '+' || body[i] == '-')) ++i;
  size_t int_digits = 0, frac_digits = 0;
  while (i < n && std::isdigit(static_cast<unsigned char>(body[i]))) ++i, ++int_digits;
  if (i < n && body[i] == '.') {
    ++i;
    while (i < n && std::isdigit(static_cast<unsigned char>(body[i]))) ++i, ++frac_digits;
  }
  if (int_digits + frac_digits == 0) return std::nullopt;
  if (i < n && (body[i] == 'e' || body[i] == 'E')) {
    ++i;
    if (i < n && (body[i] == '+' || body[i] == '-')) ++i;
    size_t e = 0;
    while (i < n && std::isdigit(static_cast<unsigned char>(body[i]))) ++i, ++e;
    if (e == 0) return std::nullopt;
  }
  if (i != n) return std::nullopt;
  return std::strtod(body.c_str(), nullptr);
}

Value to_int(const Value& v, const CallArgs& args) {
  BoundArgs a("int", args, {"default", "base"});
  Value dflt = a.get_or(0, Value(0));
  int64_t base = a.get_int(1, 10);
  require_defined(v);  // int(Undefined) raises UndefinedError, which jinja2's fallbacks do not catch
  if (v.is_integral()) return Value(v.as_int());
  if (v.is_float()) {
    double x = v.as_float();
    if (std::isinf(x)) raise(ErrorKind::Type, "cannot convert float infinity to integer");
    if (std::isnan(x)) return dflt;
    if (std::fabs(x) >= 9.2e18) raise(ErrorKind::Type, "integer overflow (the engine's ints are 64-bit)");
    return Value(static_cast<int64_t>(std::trunc(x)));
  }
  if (v.is_string()) {
    if (auto i = parse_py_int(v.str(), base)) return Value(*i);
    if (auto f = parse_py_float(v.str())) {
      if (std::isnan(*f) || std::isinf(*f)) return dflt;
      if (std::fabs(*f) >= 9.2e18) raise(ErrorKind::Type, "integer overflow (the engine's ints are 64-bit)");
      return Value(static_cast<int64_t>(std::trunc(*f)));
    }
  }
  return dflt;
}

Value to_float(const Value& v, const CallArgs& args) {
  BoundArgs a("float", args, {"default"});
  require_defined(v);
  if (v.is_number()) return Value(v.as_float());
  if (v.is_string()) {
    if (auto f = parse_py_float(v.str())) return Value(*f);
  }
  return a.get_or(0, Value(0.0));
}

}  // namespace

bool apply_number_filter(Evaluator&, const std::string& name, const Value& v, const CallArgs& args, Value& out) {
  if (name == "int") {
    out = to_int(v, args);
  } else if (name == "float") {
    out = to_float(v, args);
  } else if (name == "abs") {
    BoundArgs a(name, args, {});
    require_defined(v);
    if (v.is_integral()) {
      if (v.as_int() == INT64_MIN) raise(ErrorKind::Type, "integer overflow (the engine's ints are 64-bit)");
      out = Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
    } else if (v.is_float()) {
      out = Value(std::fabs(v.as_float()));
    } else {
      raise(ErrorKind::Type, fmt::format("bad operand type for abs(): '{}'", v.type_name()));
    }
  } else {
    return false;
  }
  return true;
}

}  // namespace slimkv::jinja
