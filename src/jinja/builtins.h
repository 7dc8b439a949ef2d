// The builtins a template can reach, each a whitelist: methods of str / dict / list (methods.cpp; the mutating ones
// are refused as jinja2's ImmutableSandboxedEnvironment refuses them), filters (filters.cpp), tests
// (value_tests.cpp) and globals (globals.cpp: range, dict, namespace, raise_exception, strftime_now), plus the
// argument binder they share.
// Must not know: the syntax tree; they see only Values and the Evaluator's services.
#pragma once
#include <initializer_list>
#include <string>
#include <vector>

#include "jinja/evaluator.h"
#include "jinja/value.h"

namespace slimkv::jinja {

bool has_method(const Value& obj, const std::string& name);
Value bound_method(const Value& obj, const std::string& name);
Value call_method(Evaluator& ev, const Value& obj, const std::string& name, const CallArgs& args);

Value apply_filter(Evaluator& ev, const std::string& name, const Value& v, const CallArgs& args);
bool apply_test(Evaluator& ev, const std::string& name, const Value& v, const CallArgs& args);

bool is_filter_name(const std::string& name);
bool is_test_name(const std::string& name);

void add_globals(Scope& scope);

// A builtin's arguments bound like Python's: positionally then by keyword, onto the parameter names given.
class BoundArgs {
 public:
  BoundArgs(const std::string& fname, const CallArgs& args, std::initializer_list<const char*> names);
  bool has(size_t i) const { return given_[i]; }
  const Value& get(size_t i) const { return values_[i]; }
  Value get_or(size_t i, Value dflt) const { return given_[i] ? values_[i] : std::move(dflt); }
  const Value& required(size_t i) const;
  int64_t get_int(size_t i, int64_t dflt) const;  // an int (bool included); TypeError otherwise
  std::string get_str(size_t i, const std::string& dflt) const;  // str(x)

 private:
  std::string fname_;
  std::vector<const char*> names_;
  std::vector<Value> values_;
  std::vector<bool> given_;
};

// jinja2's make_attrgetter: "a.b.0" looked up part by part with getitem (digits as ints).
Value get_attribute_path(Evaluator& ev, const Value& item, const Value& attribute);

}  // namespace slimkv::jinja
