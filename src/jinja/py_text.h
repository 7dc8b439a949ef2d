// How values become text, as Python prints them: str() (what {{ }} writes), repr() (inside printed lists and dicts),
// float repr (shortest round trip: 1.0, 0.1, 1e+16) and json.dumps as transformers' tojson calls it.
// Must not know: templates or the evaluator.
#pragma once
#include <optional>
#include <string>

#include "jinja/value.h"

namespace slimkv::jinja {

std::string float_repr(double d);
std::string py_str(const Value& v);   // str(v); undefined is ""
std::string py_repr(const Value& v);  // repr(v)
std::string string_repr(const std::string& s);

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // None: one line with ", " and ": "; else newlines, this per level, and ","
  std::optional<std::string> item_separator;  // separators=(item, key) when given
  std::optional<std::string> key_separator;
  bool sort_keys = false;
};
// json.dumps(v, ...); throws TemplateError (Type) for what JSON cannot hold (undefined, namespace, callable).
std::string json_dumps(const Value& v, const JsonDumpOptions& opt);

}  // namespace slimkv::jinja
