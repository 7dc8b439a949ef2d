// The compile-time check jinja2 makes after parsing: a filter or test that does not exist is an error at once
// ("No filter named 'x'."), unless it sits in an if statement or a conditional expression, where it fails only if
// it runs (jinja2's soft frames; inner frames — loops, macros, blocks — are strict again).
// Must not know: how filters and tests work (only whether the names exist).
#pragma once
#include "jinja/ast.h"

namespace slimkv::jinja {

// Throws TemplateError (Syntax).
void check_filter_and_test_names(const Body& body);

}  // namespace slimkv::jinja
