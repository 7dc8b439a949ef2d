#include "jinja/py_ops.h"

#include <cmath>
#include <cstdint>

#include "jinja/evaluator.h"
#include "jinja/template_error.h"
#include "jinja/utf8_text.h"

namespace slimkv::jinja {

void require_defined(const Value& v) {
  if (v.is_undefined()) raise(ErrorKind::Undefined, v.undefined_hint());
}

namespace {

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  raise(ErrorKind::Type, "unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
}

[[noreturn]] void overflow() { raise(ErrorKind::Type, "integer overflow (the engine's ints are 64-bit)"); }

int64_t int_op(const std::string& op, int64_t x, int64_t y) {
  int64_t r = 0;
  if (op == "+") {
    if (__builtin_add_overflow(x, y, &r)) overflow();
  } else if (op == "-") {
    if (__builtin_sub_overflow(x, y, &r)) overflow();
  } else if (op == "*") {
    if (__builtin_mul_overflow(x, y, &r)) overflow();
  } else if (op == "//" || op == "%") {
    if (y == 0) raise(ErrorKind::Type, "integer division or modulo by zero");
    if (x == INT64_MIN && y == -1) {
      if (op == "%") return 0;
      overflow();
    }
    int64_t q = x / y, m = x % y;
    if (m != 0 && ((m < 0) != (y < 0))) --q, m += y;
    r = op == "//" ? q : m;
  } else {  // ** with y >= 0
    r = 1;
    for (int64_t base = x, e = y; e > 0; e >>= 1) {
      if ((e & 1) && __builtin_mul_overflow(r, base, &r)) overflow();
      if (e > 1 && __builtin_mul_overflow(base, base, &base)) overflow();
    }
  }
  return r;
}

double float_op(const std::string& op, double x, double y) {
  if (op == "+") return x + y;
  if (op == "-") return x - y;
  if (op == "*") return x * y;
  if (op == "/") {
    if (y == 0) raise(ErrorKind::Type, "float division by zero");
    return x / y;
  }
  if (op == "//" || op == "%") {
    if (y == 0) raise(ErrorKind::Type, op == "%" ? "float modulo" : "float floor division by zero");
    double mod = std::fmod(x, y);
    double div = (x - mod) / y;
    if (mod != 0) {
      if ((y < 0) != (mod < 0)) mod += y, div -= 1.0;
    } else {
      mod = std::copysign(0.0, y);
    }
    if (op == "%") return mod;
    if (div == 0) return std::copysign(0.0, x / y);
    double fl = std::floor(div);
    if (div - fl > 0.5) fl += 1.0;
    return fl;
  }
  // **
  if (x == 0 && y < 0) raise(ErrorKind::Type, "0.0 cannot be raised to a negative power");
  if (x < 0 && std::floor(y) != y) raise(ErrorKind::Type, "a negative number to a fractional power is complex");
  return std::pow(x, y);
}

Value repeat(Evaluator& ev, const Value& seq, int64_t n) {
  if (n <= 0) return seq.is_string() ? Value(std::string()) : Value::list({}, seq.list().tuple);
  size_t unit = seq.is_string() ? seq.str().size() : seq.items().size() * sizeof(Value);
  if (unit != 0 && static_cast<uint64_t>(n) > (size_t{1} << 40) / unit) ev.check_size(size_t{1} << 40);
  ev.check_size(unit * n);
  ev.charge(static_cast<int64_t>(unit * n));
  if (seq.is_string()) {
    std::string s;
    s.reserve(seq.str().size() * n);
    for (int64_t i = 0; i < n; ++i) s += seq.str();
    return Value(std::move(s));
  }
  std::vector<Value> items;
  for (int64_t i = 0; i < n; ++i) items.insert(items.end(), seq.items().begin(), seq.items().end());
  return Value::list(std::move(items), seq.list().tuple);
}

Value concat(Evaluator& ev, const std::string& op, const Value& a, const Value& b) {
  if (a.is_string() && b.is_string()) {
    ev.check_size(a.str().size() + b.str().size());
    ev.charge(static_cast<int64_t>(a.str().size() + b.str().size()));
    return Value(a.str() + b.str());
  }
  if (a.is_sequence() && b.is_sequence() && a.list().tuple == b.list().tuple) {
    ev.check_size((a.items().size() + b.items().size()) * sizeof(Value));
    ev.charge(static_cast<int64_t>(a.items().size() + b.items().size()));
    std::vector<Value> items = a.items();
    items.insert(items.end(), b.items().begin(), b.items().end());
    return Value::list(std::move(items), a.list().tuple);
  }
  if (a.is_string() || a.is_list()) {
    raise(ErrorKind::Type, std::string("can only concatenate ") + a.type_name() + " (not \"" + b.type_name() +
                               "\") to " + a.type_name());
  }
  unsupported(op, a, b);
}

}  // namespace

Value py_binary(Evaluator& ev, const std::string& op, const Value& a, const Value& b) {
  require_defined(a);
  require_defined(b);
  if (a.is_number() && b.is_number()) {
    if (op == "/") return Value(float_op(op, a.as_float(), b.as_float()));
    if (a.is_integral() && b.is_integral()) {
      if (op == "**" && b.as_int() < 0) return Value(float_op(op, a.as_float(), b.as_float()));
      return Value(int_op(op, a.as_int(), b.as_int()));
    }
    return Value(float_op(op, a.as_float(), b.as_float()));
  }
  if (op == "+") return concat(ev, op, a, b);
  if (op == "*" && (a.is_string() || a.is_sequence()) && b.is_integral()) return repeat(ev, a, b.as_int());
  if (op == "*" && (b.is_string() || b.is_sequence()) && a.is_integral()) return repeat(ev, b, a.as_int());
  if (op == "%" && a.is_string()) raise(ErrorKind::Type, "printf-style string formatting (%) is not supported");
  unsupported(op, a, b);
}

Value py_negate(const Value& v, bool minus) {
  require_defined(v);
  if (v.is_integral()) {
    if (!minus) return Value(v.as_int());
    if (v.as_int() == INT64_MIN) overflow();
    return Value(-v.as_int());
  }
  if (v.is_float()) return Value(minus ? -v.as_float() : v.as_float());
  raise(ErrorKind::Type, std::string("bad operand type for unary ") + (minus ? "-" : "+") + ": '" + v.type_name() + "'");
}

bool py_compare(const Value& a, const Value& b, const std::string& op) {
  if (op == "==") return py_equal(a, b);
  if (op == "!=") return !py_equal(a, b);
  if (a.is_number() && b.is_number() && (a.is_float() || b.is_float())) {
    double x = a.as_float(), y = b.as_float();
    if (std::isnan(x) || std::isnan(y)) return false;
  }
  if (op == "<") return py_less(a, b);
  if (op == ">") return py_less(b, a);
  if (a.is_sequence() && b.is_sequence() && a.list().tuple == b.list().tuple) {
    const auto &x = a.items(), &y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!py_equal(x[i], y[i])) return py_compare(x[i], y[i], op);
    }
    return op == "<=" ? x.size() <= y.size() : x.size() >= y.size();
  }
  return op == "<=" ? (py_less(a, b) || py_equal(a, b)) : (py_less(b, a) || py_equal(a, b));
}

bool py_hashable(const Value& v) {
  if (v.is_dict()) return false;
  if (!v.is_list()) return true;
  if (v.is_generator()) return true;
  if (!v.list().tuple) return false;
  for (const auto& e : v.items()) {
    if (!py_hashable(e)) return false;
  }
  return true;
}

bool py_contains(const Value& c, const Value& item) {
  switch (c.kind()) {
    case Value::Kind::Undefined: return false;
    case Value::Kind::String:
      if (!item.is_string()) {
        raise(ErrorKind::Type, std::string("'in <string>' requires string as left operand, not ") + item.type_name());
      }
      return c.str().find(item.str()) != std::string::npos;
    case Value::Kind::List:
      for (const auto& e : c.items()) {
        if (py_equal(e, item)) return true;
      }
      return false;
    case Value::Kind::Dict:
      if (!py_hashable(item)) raise(ErrorKind::Type, std::string("unhashable type: '") + item.type_name() + "'");
      return c.dict().find(item) != nullptr;
    default: raise(ErrorKind::Type, std::string("argument of type '") + c.type_name() + "' is not iterable");
  }
}

std::vector<Value> py_iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return {};
    case Value::Kind::List: return v.items();
    case Value::Kind::Dict: {
      std::vector<Value> keys;
      keys.reserve(v.dict().items.size());
      for (const auto& [k, e] : v.dict().items) keys.push_back(k);
      return keys;
    }
    case Value::Kind::String: {
      std::vector<Value> chars;
      for (char32_t c : utf8_decode(v.str())) chars.emplace_back(utf8_encode(std::u32string(1, c)));
      return chars;
    }
    default: raise(ErrorKind::Type, std::string("'") + v.type_name() + "' object is not iterable");
  }
}

int64_t py_len(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return 0;
    case Value::Kind::String: return static_cast<int64_t>(utf8_length(v.str()));
    case Value::Kind::List:
      if (v.is_generator()) break;
      return static_cast<int64_t>(v.items().size());
    case Value::Kind::Dict: return static_cast<int64_t>(v.dict().items.size());
    default: break;
  }
  raise(ErrorKind::Type, std::string("object of type '") + v.type_name() + "' has no len()");
}

std::optional<Value> py_index(const Value& obj, int64_t i) {
  if (obj.is_sequence()) {
    auto n = static_cast<int64_t>(obj.items().size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return std::nullopt;
    return obj.items()[i];
  }
  if (obj.is_string()) {
    if (is_ascii(obj.str())) {
      auto n = static_cast<int64_t>(obj.str().size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return std::nullopt;
      return Value(std::string(1, obj.str()[i]));
    }
    std::u32string u = utf8_decode(obj.str());
    auto n = static_cast<int64_t>(u.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return std::nullopt;
    return Value(utf8_encode(u.substr(i, 1)));
  }
  return std::nullopt;
}

Value py_slice(Evaluator& ev, const Value& obj, std::optional<int64_t> start, std::optional<int64_t> stop,
               std::optional<int64_t> step) {
  int64_t st = step.value_or(1);
  if (st == 0) raise(ErrorKind::Type, "slice step cannot be zero");
  std::u32string u;
  const bool ascii = obj.is_string() && is_ascii(obj.str());
  if (obj.is_string() && !ascii) u = utf8_decode(obj.str());
  const int64_t n = obj.is_list() ? static_cast<int64_t>(obj.items().size())
                                  : ascii ? static_cast<int64_t>(obj.str().size()) : static_cast<int64_t>(u.size());
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {  // CPython's PySlice_AdjustIndices
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = st < 0 ? -1 : 0;
    } else if (x >= n) {
      x = st < 0 ? n - 1 : n;
    }
    return x;
  };
  int64_t lo = clamp(start, st < 0 ? n - 1 : 0), hi = clamp(stop, st < 0 ? -1 : n);
  ev.charge(n);
  std::vector<int64_t> idx;
  for (int64_t i = lo; st > 0 ? i < hi : i > hi; i += st) idx.push_back(i);
  if (obj.is_list()) {
    std::vector<Value> items;
    items.reserve(idx.size());
    for (int64_t i : idx) items.push_back(obj.items()[i]);
    return Value::list(std::move(items), obj.list().tuple);
  }
  std::string s;
  for (int64_t i : idx) {
    if (ascii) s.push_back(obj.str()[i]);
    else utf8_append(s, u[i]);
  }
  return Value(std::move(s));
}

}  // namespace slimkv::jinja
