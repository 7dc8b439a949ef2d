// The filter families filters.cpp dispatches to: over sequences (sequence_filters.cpp: length, list, map, select,
// reject, selectattr, rejectattr, unique, sort, dictsort, items, reverse, min, max, sum, attr) and over numbers
// (number_filters.cpp: int, float, abs). Each returns false when `name` is not one of its own.
// Must not know: the syntax tree.
#pragma once
#include <string>

#include "jinja/value.h"

namespace slimkv::jinja {

bool apply_sequence_filter(Evaluator& ev, const std::string& name, const Value& v, const CallArgs& args, Value& out);
bool apply_number_filter(Evaluator& ev, const std::string& name, const Value& v, const CallArgs& args, Value& out);

}  // namespace slimkv::jinja
