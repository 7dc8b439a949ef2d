// The one error type of the grammar engine: a schema keyword, regex construct or grammar shape it does not support,
// malformed input, or a bound (size, nesting, ambiguity) exceeded.
// Owns: GrammarError. Must not know: tokenizers, models, HTTP.
#pragma once
#include <string>

#include "core/check.h"

namespace slimkv::grammar {

// A slimkv::Error (so a std::runtime_error) whose message names the construct or input at fault.
struct GrammarError : slimkv::Error {
  explicit GrammarError(const std::string& msg) : slimkv::Error(msg) {}
};

template <typename... Args>
[[noreturn]] void grammar_fail(fmt::format_string<Args...> f, Args&&... args) {
  throw GrammarError(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace slimkv::grammar
