// Methods a template may call on values: Python's str methods (on code points), dict.items/keys/values/get and
// list.index/count. Mutating methods exist (so `d.update` is found) but calling them is a sandbox error.
#include <algorithm>
#include <fmt/format.h>

#include "jinja/builtins.h"
#include "jinja/py_ops.h"
#include "jinja/py_text.h"
#include "jinja/str_methods.h"
#include "jinja/template_error.h"

namespace slimkv::jinja {

BoundArgs::BoundArgs(const std::string& fname, const CallArgs& args, std::initializer_list<const char*> names)
    : fname_(fname), names_(names), values_(names.size()), given_(names.size(), false) {
  if (args.args.size() > names.size()) {
    raise(ErrorKind::Type, fmt::format("{}() takes at most {} argument(s) ({} given)", fname, names.size(), args.args.size()));
  }
  for (size_t i = 0; i < args.args.size(); ++i) values_[i] = args.args[i], given_[i] = true;
  for (const auto& kv : args.kwargs) {
    const std::string& k = kv.first;
    const Value& v = kv.second;
    auto it = std::find_if(names_.begin(), names_.end(), [&k](const char* n) { return k == n; });
    if (it == names_.end()) raise(ErrorKind::Type, fmt::format("{}() got an unexpected keyword argument '{}'", fname, k));
    size_t i = static_cast<size_t>(it - names_.begin());
    if (given_[i]) raise(ErrorKind::Type, fmt::format("{}() got multiple values for argument '{}'", fname, k));
    values_[i] = v, given_[i] = true;
  }
}

const Value& BoundArgs::required(size_t i) const {
  if (!given_[i]) raise(ErrorKind::Type, fmt::format("{}() missing required argument '{}'", fname_, names_[i]));
  return values_[i];
}

int64_t BoundArgs::get_int(size_t i, int64_t dflt) const {
  if (!given_[i] || values_[i].is_none()) return dflt;
  if (!values_[i].is_integral()) {
    raise(ErrorKind::Type, fmt::format("'{}' object cannot be interpreted as an integer", values_[i].type_name()));
  }
  return values_[i].as_int();
}

std::string BoundArgs::get_str(size_t i, const std::string& dflt) const { return given_[i] ? py_str(values_[i]) : dflt; }

namespace {

const char* const kStrMethods[] = {"strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith",
                                   "endswith", "replace", "upper", "lower", "title", "capitalize", "swapcase",
                                   "find", "rfind", "index", "rindex", "count", "join", "isdigit", "isalpha",
                                   "isalnum", "isspace", "isupper", "islower", "isnumeric", "isdecimal", "zfill",
                                   "center", "ljust", "rjust", "partition", "rpartition", "removeprefix",
                                   "removesuffix", "casefold"};
const char* const kDictMethods[] = {"items", "keys", "values", "get", "copy"};
const char* const kDictMutators[] = {"pop", "popitem", "setdefault", "update", "clear"};
const char* const kListMethods[] = {"index", "count", "copy"};
const char* const kListMutators[] = {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"};

template <size_t N>
bool listed(const char* const (&names)[N], const std::string& name) {
  return std::any_of(std::begin(names), std::end(names), [&](const char* n) { return name == n; });
}

class BoundMethod : public Callable {
 public:
  BoundMethod(Value obj, std::string name) : obj_(std::move(obj)), name_(std::move(name)) {}
  Value call(Evaluator& ev, const CallArgs& args) override { return call_method(ev, obj_, name_, args); }
  std::string describe() const override {
    return fmt::format("<built-in method {} of {} object>", name_, obj_.type_name());
  }

 private:
  Value obj_;
  std::string name_;
};

Value dict_method(Evaluator& ev, const Value& obj, const std::string& name, const CallArgs& args) {
  const DictData& d = obj.dict();
  if (name == "get") {
    BoundArgs a("get", args, {"key", "default"});
    const Value* v = d.find(a.required(0));
    return v ? *v : a.get_or(1, Value::none());
  }
  BoundArgs a(name, args, {});
  ev.charge(static_cast<int64_t>(d.items.size()));
  if (name == "copy") return Value::dict(d);
  std::vector<Value> out;
  for (const auto& [k, v] : d.items) {
    if (name == "items") out.push_back(Value::list({k, v}, true));
    else out.push_back(name == "keys" ? k : v);
  }
  return Value::view(std::move(out), name == "items" ? "dict_items" : name == "keys" ? "dict_keys" : "dict_values");
}

Value list_method(const Value& obj, const std::string& name, const CallArgs& args) {
  if (name == "copy") {
    BoundArgs a(name, args, {});
    return Value::list(obj.items(), obj.list().tuple);
  }
  BoundArgs a(name, args, {"value"});
  const Value& x = a.required(0);
  int64_t count = 0;
  for (size_t i = 0; i < obj.items().size(); ++i) {
    if (!py_equal(obj.items()[i], x)) continue;
    if (name == "index") return Value(static_cast<int64_t>(i));
    ++count;
  }
  if (name == "index") raise(ErrorKind::Type, fmt::format("{} is not in list", py_repr(x)));
  return Value(count);
}

}  // namespace

bool has_method(const Value& obj, const std::string& name) {
  if (obj.is_string()) return listed(kStrMethods, name);
  if (obj.is_dict()) return listed(kDictMethods, name) || listed(kDictMutators, name);
  if (obj.is_sequence() && !obj.list().tuple) return listed(kListMethods, name) || listed(kListMutators, name);
  if (obj.is_sequence()) return name == "index" || name == "count";
  return false;
}

Value bound_method(const Value& obj, const std::string& name) {
  return Value::callable(std::make_shared<BoundMethod>(obj, name));
}

Value call_method(Evaluator& ev, const Value& obj, const std::string& name, const CallArgs& args) {
  ev.charge(1);
  if (obj.is_string()) return call_str_method(ev, obj.str(), name, args);
  if ((obj.is_dict() && listed(kDictMutators, name)) || (obj.is_list() && listed(kListMutators, name))) {
    raise(ErrorKind::Security, fmt::format("access to attribute '{}' of '{}' object is unsafe.", name, obj.type_name()));
  }
  if (obj.is_dict()) return dict_method(ev, obj, name, args);
  if (obj.is_list()) return list_method(obj, name, args);
  raise(ErrorKind::Type, fmt::format("'{}' object has no attribute '{}'", obj.type_name(), name));
}

}  // namespace slimkv::jinja
