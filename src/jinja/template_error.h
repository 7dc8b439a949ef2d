// The one error type of the Jinja engine: a slimkv::Error with a kind, so a caller can tell a template's own
// raise_exception (a rule the template states about its input) from a syntax error, a type error or a sandbox limit.
// Must not know: HTTP or the server (it turns Raised into a 400 naming the rule, the rest into a 500 or a 400).
#pragma once
#include <string>

#include "core/check.h"

namespace slimkv::jinja {

enum class ErrorKind {
  Syntax,     // the template text does not parse (message ends with " (line N)")
  Undefined,  // an operation on an undefined value (jinja2's UndefinedError)
  Type,       // a Python-level type or value error inside the template (TypeError, ValueError, ZeroDivisionError)
  Security,   // the sandbox refused (mutating a list or dict, an unsafe attribute)
  Limit,      // a sandbox bound was reached (loop iterations, recursion depth, output or work size)
  Raised,     // raise_exception(message) called by the template: the message is exactly the template's text
};

const char* error_kind_name(ErrorKind k);

class TemplateError : public Error {
 public:
  TemplateError(ErrorKind kind, const std::string& msg) : Error(msg), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

[[noreturn]] inline void raise(ErrorKind kind, const std::string& msg) { throw TemplateError(kind, msg); }

}  // namespace slimkv::jinja
