// Parser: tokens -> syntax tree, following jinja2's grammar and precedence (tests and filters bind tighter than
// arithmetic; ** is left-associative; `a if c` without else is undefined when c is false).
// Statements: if/elif/else, for (target unpacking, `if` filter, else), set (also block set and namespace
// attributes), macro, call, filter, with, raw, break/continue, generation. Unsupported tags (extends, block, include,
// import, recursive loops) are syntax errors that say so.
// Must not know: values' behaviour or evaluation.
#pragma once
#include <vector>

#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace slimkv::jinja {

struct ParseLimits {
  int max_nesting = 128;  // nested expressions and blocks (Limits::max_nesting)
};

// Throws TemplateError (Syntax) with the line.
Body parse_template(const std::vector<Token>& tokens, const ParseLimits& limits = {});

}  // namespace slimkv::jinja
