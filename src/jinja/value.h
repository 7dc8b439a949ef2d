// Value: what a Jinja expression evaluates to, with Python's meanings — undefined (jinja2's Undefined, carrying why),
// none, bool, int (int64), float, string (UTF-8), list (or tuple), dict (insertion-ordered, like Python's), namespace
// (the one mutable object) and callable (macros, globals, bound methods). Also: truthiness, ==, <, and JSON in.
// Must not know: templates, scopes or how values are printed (py_text.h).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace slimkv::jinja {

class Value;
class Evaluator;

struct ListData {
  std::vector<Value> items;
  bool tuple = false;  // a Python tuple: printed as (a, b), unequal to a list
  // Not a list but an iterator or view Python would return (map/select filters: "generator"; dict.items():
  // "dict_items", "dict_keys", "dict_values"; reverse: "list_reverseiterator"): iterable, but not indexable, not JSON,
  // and a generator has no len() and is always true.
  const char* view = nullptr;
  int depth = 1;  // nesting of lists and dicts inside, this one included (bounded: kMaxValueDepth)
};

struct DictData {
  std::vector<std::pair<Value, Value>> items;  // insertion order; keys unique by ==
  const Value* find(const Value& key) const;
  const Value* find(const std::string& key) const;
  void set(Value key, Value value);  // replaces in place or appends
  int depth = 1;
};

// Lists and dicts nest at most this deep (printing, comparing and freeing them recurse); deeper is a Limit error.
constexpr int kMaxValueDepth = 256;

// Positional and keyword arguments of one call.
struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
  const Value* kwarg(const std::string& name) const;
};

class Callable {
 public:
  virtual ~Callable() = default;
  virtual Value call(Evaluator& ev, const CallArgs& args) = 0;
  virtual std::string describe() const = 0;  // how str() shows it
};

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Callable };

  Value() = default;  // undefined, no hint
  Value(bool b) : kind_(Kind::Bool) { num_.b = b; }
  Value(int v) : Value(static_cast<int64_t>(v)) {}
  Value(int64_t v) : kind_(Kind::Int) { num_.i = v; }
  Value(double v) : kind_(Kind::Float) { num_.f = v; }
  Value(std::string s);
  Value(const char* s) : Value(std::string(s)) {}

  // An undefined value; `hint` is jinja2's message when it is used ("'x' is undefined").
  static Value undefined(std::string hint);
  static Value none();
  static Value list(std::vector<Value> items, bool tuple = false);
  static Value view(std::vector<Value> items, const char* type);  // see ListData::view
  static Value dict(DictData d);
  static Value make_namespace(DictData d);
  static Value callable(std::shared_ptr<Callable> c);
  static Value from_json(const nlohmann::json& j);
  static Value from_json(const nlohmann::ordered_json& j);  // keeps the objects' key order

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_float() const { return kind_ == Kind::Float; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_list() const { return kind_ == Kind::List; }  // also tuples and views
  bool is_sequence() const { return kind_ == Kind::List && !list().view; }  // a list or tuple
  bool is_generator() const;  // a view without len()
  bool is_dict() const { return kind_ == Kind::Dict; }
  bool is_namespace() const { return kind_ == Kind::Namespace; }
  bool is_callable() const { return kind_ == Kind::Callable; }
  bool is_number() const { return kind_ == Kind::Bool || kind_ == Kind::Int || kind_ == Kind::Float; }
  bool is_integral() const { return kind_ == Kind::Bool || kind_ == Kind::Int; }  // Python int (bool included)

  bool as_bool() const { return num_.b; }
  int64_t as_int() const { return kind_ == Kind::Bool ? (num_.b ? 1 : 0) : num_.i; }  // Bool or Int
  double as_float() const;                                                          // any number
  const std::string& str() const { return *std::static_pointer_cast<std::string>(ptr_); }
  const ListData& list() const { return *std::static_pointer_cast<ListData>(ptr_); }
  const std::vector<Value>& items() const { return list().items; }
  const DictData& dict() const { return *std::static_pointer_cast<DictData>(ptr_); }  // Dict or Namespace
  DictData& namespace_data() const { return *std::static_pointer_cast<DictData>(ptr_); }
  Callable& callable() const { return *std::static_pointer_cast<Callable>(ptr_); }
  std::string undefined_hint() const;  // jinja2's UndefinedError message for this value
  const void* identity() const { return ptr_.get(); }
  int depth() const;  // 0 for scalars and namespaces, else the list's or dict's nesting

  bool truthy() const;
  // Python's type name: 'str', 'int', 'list', 'dict', 'NoneType', 'Undefined', ...
  const char* type_name() const;

 private:
  Kind kind_ = Kind::Undefined;
  union {
    bool b;
    int64_t i;
    double f;
  } num_{};
  std::shared_ptr<void> ptr_;  // string, list, dict, namespace, callable, or the undefined hint
};

// Python ==.
bool py_equal(const Value& a, const Value& b);
// Python <, for numbers, strings and lists / tuples (lexicographic); throws TemplateError (Type) otherwise.
bool py_less(const Value& a, const Value& b);
// The value as JSON (tojson goes through py_text.h's json_dumps instead; this is for callers).
nlohmann::ordered_json to_json(const Value& v);

}  // namespace slimkv::jinja
