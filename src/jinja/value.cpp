#include "jinja/value.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <limits>

#include "jinja/template_error.h"

namespace slimkv::jinja {

const Value* DictData::find(const Value& key) const {
  for (const auto& [k, v] : items) {
    if (py_equal(k, key)) return &v;
  }
  return nullptr;
}

const Value* DictData::find(const std::string& key) const {
  for (const auto& [k, v] : items) {
    if (k.is_string() && k.str() == key) return &v;
  }
  return nullptr;
}

void DictData::set(Value key, Value value) {
  for (auto& [k, v] : items) {
    if (py_equal(k, key)) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(value));
}

const Value* CallArgs::kwarg(const std::string& name) const {
  for (const auto& [k, v] : kwargs) {
    if (k == name) return &v;
  }
  return nullptr;
}

Value::Value(std::string s) : kind_(Kind::String), ptr_(std::make_shared<std::string>(std::move(s))) {}

Value Value::undefined(std::string hint) {
  Value v;
  if (!hint.empty()) v.ptr_ = std::make_shared<std::string>(std::move(hint));
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}

namespace {
int nesting_of(const std::vector<Value>& items) {
  int d = 0;
  for (const auto& e : items) d = std::max(d, e.depth());
  if (d + 1 > kMaxValueDepth) {
    raise(ErrorKind::Limit, "lists and dicts nest deeper than " + std::to_string(kMaxValueDepth) + " levels (sandbox limit)");
  }
  return d + 1;
}
}  // namespace

int Value::depth() const {
  if (kind_ == Kind::List) return list().depth;
  if (kind_ == Kind::Dict) return dict().depth;
  return 0;
}

Value Value::list(std::vector<Value> items, bool tuple) {
  Value v;
  v.kind_ = Kind::List;
  const int depth = nesting_of(items);
  v.ptr_ = std::make_shared<ListData>(ListData{std::move(items), tuple, nullptr, depth});
  return v;
}

Value Value::view(std::vector<Value> items, const char* type) {
  Value v = list(std::move(items));
  std::static_pointer_cast<ListData>(v.ptr_)->view = type;
  return v;
}

bool Value::is_generator() const {
  if (kind_ != Kind::List || !list().view) return false;
  std::string_view t(list().view);
  return t == "generator" || t == "list_reverseiterator";
}

Value Value::dict(DictData d) {
  Value v;
  v.kind_ = Kind::Dict;
  int depth = 0;
  for (const auto& [k, e] : d.items) depth = std::max({depth, k.depth(), e.depth()});
  if (depth + 1 > kMaxValueDepth) {
    raise(ErrorKind::Limit, "lists and dicts nest deeper than " + std::to_string(kMaxValueDepth) + " levels (sandbox limit)");
  }
  d.depth = depth + 1;
  v.ptr_ = std::make_shared<DictData>(std::move(d));
  return v;
}

Value Value::make_namespace(DictData d) {
  Value v = dict(std::move(d));
  v.kind_ = Kind::Namespace;
  return v;
}

Value Value::callable(std::shared_ptr<Callable> c) {
  Value v;
  v.kind_ = Kind::Callable;
  v.ptr_ = std::move(c);
  return v;
}

namespace {
template <typename Json>
Value value_from_json(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return Value::none();
    case Json::value_t::boolean: return Value(j.template get<bool>());
    case Json::value_t::number_integer: return Value(j.template get<int64_t>());
    case Json::value_t::number_unsigned: {
      uint64_t u = j.template get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case Json::value_t::number_float: return Value(j.template get<double>());
    case Json::value_t::string: return Value(j.template get<std::string>());
    case Json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(value_from_json(e));
      return Value::list(std::move(items));
    }
    case Json::value_t::object: {
      DictData d;
      d.items.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) d.items.emplace_back(Value(it.key()), value_from_json(it.value()));
      return Value::dict(std::move(d));
    }
    default: return Value::none();  // binary, discarded
  }
}
}  // namespace

Value Value::from_json(const nlohmann::json& j) { return value_from_json(j); }
Value Value::from_json(const nlohmann::ordered_json& j) { return value_from_json(j); }

double Value::as_float() const {
  switch (kind_) {
    case Kind::Bool: return num_.b ? 1.0 : 0.0;
    case Kind::Int: return static_cast<double>(num_.i);
    default: return num_.f;
  }
}

std::string Value::undefined_hint() const {
  return ptr_ ? *std::static_pointer_cast<std::string>(ptr_) : std::string("value is undefined");
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return num_.b;
    case Kind::Int: return num_.i != 0;
    case Kind::Float: return num_.f != 0.0;
    case Kind::String: return !str().empty();
    case Kind::List: return is_generator() || !items().empty();
    case Kind::Dict: return !dict().items.empty();
    case Kind::Namespace:
    case Kind::Callable: return true;
  }
  return false;
}

const char* Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List: return list().view ? list().view : list().tuple ? "tuple" : "list";
    case Kind::Dict: return "dict";
    case Kind::Namespace: return "Namespace";
    case Kind::Callable: return "function";
  }
  return "object";
}

namespace {
// Exact comparison of an int64 with a double (Python compares int and float exactly).
int compare_int_float(int64_t i, double f) {
  if (std::isnan(f)) return 2;  // unordered
  if (f >= 9223372036854775808.0) return -1;
  if (f < -9223372036854775808.0) return 1;
  double fl = std::floor(f);
  auto fi = static_cast<int64_t>(fl);
  if (i < fi) return -1;
  if (i > fi) return 1;
  return fl == f ? 0 : -1;
}

int compare_numbers(const Value& a, const Value& b) {  // -1, 0, 1, or 2 when unordered (NaN)
  if (a.is_integral() && b.is_integral()) return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
  if (a.is_integral()) return compare_int_float(a.as_int(), b.as_float());
  if (b.is_integral()) {
    int c = compare_int_float(b.as_int(), a.as_float());
    return c == 2 ? 2 : -c;
  }
  double x = a.as_float(), y = b.as_float();
  if (std::isnan(x) || std::isnan(y)) return 2;
  return x < y ? -1 : (x > y ? 1 : 0);
}
}  // namespace

bool py_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return compare_numbers(a, b) == 0;
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return true;
    case Value::Kind::String: return a.str() == b.str();
    case Value::Kind::List: {
      if (a.list().view || b.list().view) return a.identity() == b.identity();
      if (a.list().tuple != b.list().tuple || a.items().size() != b.items().size()) return false;
      for (size_t i = 0; i < a.items().size(); ++i) {
        if (!py_equal(a.items()[i], b.items()[i])) return false;
      }
      return true;
    }
    case Value::Kind::Dict: {
      if (a.dict().items.size() != b.dict().items.size()) return false;
      for (const auto& [k, v] : a.dict().items) {
        const Value* o = b.dict().find(k);
        if (!o || !py_equal(v, *o)) return false;
      }
      return true;
    }
    default: return a.identity() == b.identity();
  }
}

bool py_less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return compare_numbers(a, b) == -1;
  if (a.is_string() && b.is_string()) return a.str() < b.str();
  if (a.is_sequence() && b.is_sequence() && a.list().tuple == b.list().tuple) {
    const auto &x = a.items(), &y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!py_equal(x[i], y[i])) return py_less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  if (a.is_undefined() || b.is_undefined()) raise(ErrorKind::Undefined, (a.is_undefined() ? a : b).undefined_hint());
  raise(ErrorKind::Type, std::string("'<' not supported between instances of '") + a.type_name() + "' and '" +
                             b.type_name() + "'");
}

nlohmann::ordered_json to_json(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Bool: return v.as_bool();
    case Value::Kind::Int: return v.as_int();
    case Value::Kind::Float: return v.as_float();
    case Value::Kind::String: return v.str();
    case Value::Kind::List: {
      auto a = nlohmann::ordered_json::array();
      for (const auto& e : v.items()) a.push_back(to_json(e));
      return a;
    }
    case Value::Kind::Dict: {
      auto o = nlohmann::ordered_json::object();
      for (const auto& [k, e] : v.dict().items) o[k.is_string() ? k.str() : std::string("?")] = to_json(e);
      return o;
    }
    default: return nullptr;
  }
}

}  // namespace slimkv::jinja
