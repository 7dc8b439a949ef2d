// A practical regex subset compiled into grammar rules (vLLM guided_regex, JSON schema "pattern" and "format"):
// literals, escapes, classes [...] with ranges and negation, ., \d \w \s (and \D \W \S), groups (capturing,
// (?:...), named), |, ?, *, +, {m}, {m,}, {m,n} (lazy suffixes accepted); always an anchored full match.
// Owns: compile_regex, regex_to_seq. Must not know: JSON schema keywords, tokens.
#pragma once
#include <memory>
#include <string_view>

#include "grammar/grammar.h"
#include "grammar/grammar_builder.h"

namespace slimkv::grammar {

// The pattern's language as a sequence in `b`. json_string_body: the text is emitted inside a JSON string, so
// literal '"', '\' and control characters are written escaped and classes never emit them raw.
Seq regex_to_seq(GrammarBuilder& b, std::string_view pattern, bool json_string_body);

// The whole text must match the pattern. A GrammarError names an unsupported construct (backreferences,
// lookaround, \b, \p{...}, POSIX classes, non-ASCII class ranges) or a malformed pattern.
std::shared_ptr<const Grammar> compile_regex(std::string_view pattern);

}  // namespace slimkv::grammar
