// Python's str methods on UTF-8 text (indices and lengths in code points), for method calls and the filters that
// wrap them (trim, upper, lower, capitalize, replace, indent's splitlines).
// Must not know: templates or scopes.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "jinja/value.h"

namespace slimkv::jinja {

Value call_str_method(Evaluator& ev, const std::string& s, const std::string& name, const CallArgs& args);

// chars: nullopt strips whitespace.
std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right);
std::string py_upper_str(const std::string& s);
std::string py_lower_str(const std::string& s);
std::string py_capitalize(const std::string& s);
std::string py_replace(Evaluator& ev, const std::string& s, const std::string& old, const std::string& repl,
                       int64_t count);
std::vector<std::string> py_splitlines(const std::string& s, bool keepends);

}  // namespace slimkv::jinja
