// A fixed list of strings -> grammar (vLLM guided_choice): the text must be exactly one of them. The choices are
// merged into a prefix tree of rules, so the parse stays a single stack however many choices there are.
// Owns: compile_choice, choice_seq. Must not know: tokens, JSON, HTTP.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/grammar_builder.h"

namespace slimkv::grammar {

// A GrammarError when the list is empty. An empty choice is allowed: it makes the empty text complete.
std::shared_ptr<const Grammar> compile_choice(const std::vector<std::string>& choices);
// The same prefix tree as a sequence in `b` (JSON schema enums use it); `choices` must not be empty.
Seq choice_seq(GrammarBuilder& b, std::vector<std::string> choices);

}  // namespace slimkv::grammar
