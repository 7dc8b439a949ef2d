// The global functions: jinja2's range (capped at the sandbox's MAX_RANGE, 100000), dict and namespace, and
// transformers' raise_exception (a TemplateError of kind Raised carrying the template's message) and strftime_now.
#include <fmt/format.h>

#include "jinja/builtins.h"
#include "jinja/py_text.h"
#include "jinja/template_error.h"

namespace slimkv::jinja {
namespace {

constexpr int64_t kMaxRange = 100000;  // jinja2.sandbox.MAX_RANGE

int64_t range_arg(const Value& v) {
  if (!v.is_integral()) raise(ErrorKind::Type, fmt::format("'{}' object cannot be interpreted as an integer", v.type_name()));
  return v.as_int();
}

class RangeFn : public Callable {
 public:
  Value call(Evaluator& ev, const CallArgs& args) override {
    if (!args.kwargs.empty()) raise(ErrorKind::Type, "range() takes no keyword arguments");
    const auto& a = args.args;
    if (a.empty() || a.size() > 3) raise(ErrorKind::Type, fmt::format("range expected 1 to 3 arguments, got {}", a.size()));
    int64_t start = a.size() == 1 ? 0 : range_arg(a[0]);
    int64_t stop = range_arg(a.size() == 1 ? a[0] : a[1]);
    int64_t step = a.size() == 3 ? range_arg(a[2]) : 1;
    if (step == 0) raise(ErrorKind::Type, "range() arg 3 must not be zero");
    __int128 n = 0;
    if (step > 0 && stop > start) n = (static_cast<__int128>(stop) - start + step - 1) / step;
    if (step < 0 && stop < start) n = (static_cast<__int128>(start) - stop - step - 1) / -step;
    if (n > kMaxRange) {
      raise(ErrorKind::Limit, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    }
    ev.charge(static_cast<int64_t>(n));
    std::vector<Value> out;
    out.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out.emplace_back(start + i * step);
    return Value::list(std::move(out));
  }
  std::string describe() const override { return "<class 'range'>"; }
};

// dict(mapping_or_pairs, **kwargs) and namespace(...): the same arguments.
DictData dict_from_args(const CallArgs& args, const char* fname) {
  DictData d;
  if (args.args.size() > 1) raise(ErrorKind::Type, fmt::format("{} expected at most 1 argument, got {}", fname, args.args.size()));
  if (!args.args.empty()) {
    const Value& src = args.args[0];
    if (src.is_dict() || src.is_namespace()) {
      d = src.dict();
    } else if (src.is_list()) {
      for (const Value& pair : src.items()) {
        if (!pair.is_sequence() || pair.items().size() != 2) {
          raise(ErrorKind::Type, "dictionary update sequence element has the wrong length; 2 is required");
        }
        d.set(pair.items()[0], pair.items()[1]);
      }
    } else {
      raise(ErrorKind::Type, fmt::format("'{}' object is not iterable", src.type_name()));
    }
  }
  for (const auto& [k, v] : args.kwargs) d.set(Value(k), v);
  return d;
}

class DictFn : public Callable {
 public:
  explicit DictFn(bool ns) : ns_(ns) {}
  Value call(Evaluator& ev, const CallArgs& args) override {
    DictData d = dict_from_args(args, ns_ ? "namespace" : "dict");
    if (!ns_) return Value::dict(std::move(d));
    Value v = Value::make_namespace(std::move(d));
    ev.track_namespace(v);
    return v;
  }
  std::string describe() const override { return ns_ ? "<class 'jinja2.utils.Namespace'>" : "<class 'dict'>"; }

 private:
  bool ns_;
};

class RaiseExceptionFn : public Callable {
 public:
  Value call(Evaluator&, const CallArgs& args) override {
    const Value* msg = args.args.empty() ? args.kwarg("message") : &args.args[0];
    raise(ErrorKind::Raised, msg ? py_str(*msg) : std::string());
  }
  std::string describe() const override { return "<function raise_exception>"; }
};

class StrftimeNowFn : public Callable {
 public:
  Value call(Evaluator& ev, const CallArgs& args) override {
    BoundArgs a("strftime_now", args, {"format"});
    const Value& fmt_v = a.required(0);
    if (!fmt_v.is_string()) raise(ErrorKind::Type, "strftime() argument 1 must be str");
    std::tm tm{};
    if (ev.options().now) {
      tm = ev.options().now();
    } else {
      std::time_t t = std::time(nullptr);
      localtime_r(&t, &tm);
    }
    if (fmt_v.str().size() > 256) raise(ErrorKind::Limit, "strftime_now: format longer than 256 bytes");
    char buf[4096];
    size_t n = fmt_v.str().empty() ? 0 : std::strftime(buf, sizeof buf, fmt_v.str().c_str(), &tm);
    return Value(std::string(buf, n));
  }
  std::string describe() const override { return "<function strftime_now>"; }
};

}  // namespace

void add_globals(Scope& scope) {
  scope.set("range", Value::callable(std::make_shared<RangeFn>()));
  scope.set("dict", Value::callable(std::make_shared<DictFn>(false)));
  scope.set("namespace", Value::callable(std::make_shared<DictFn>(true)));
  scope.set("raise_exception", Value::callable(std::make_shared<RaiseExceptionFn>()));
  scope.set("strftime_now", Value::callable(std::make_shared<StrftimeNowFn>()));
}

}  // namespace slimkv::jinja
