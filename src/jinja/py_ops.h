// Python's operators on Values, with its results and its error messages: arithmetic (int64: an overflow is an error
// where Python would grow the int), comparison, `in`, len(), iteration and slicing (code points for strings).
// Must not know: templates or scopes (the Evaluator is passed for the work budget and size bound only).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "jinja/value.h"

namespace slimkv::jinja {

// op: + - * / // % **
Value py_binary(Evaluator& ev, const std::string& op, const Value& a, const Value& b);
Value py_negate(const Value& v, bool minus);  // -v, +v
// op: == != < <= > >=
bool py_compare(const Value& a, const Value& b, const std::string& op);
bool py_contains(const Value& container, const Value& item);
std::vector<Value> py_iterate(const Value& v);  // lists, tuples, dict keys, string characters; undefined: empty
int64_t py_len(const Value& v);
Value py_slice(Evaluator& ev, const Value& obj, std::optional<int64_t> start, std::optional<int64_t> stop,
               std::optional<int64_t> step);
// obj[i] for lists, tuples and strings (negative from the end); nullopt when out of range.
std::optional<Value> py_index(const Value& obj, int64_t i);
// hash(v) would succeed: not a list, dict or dict view, nor a tuple holding one.
bool py_hashable(const Value& v);
// Raises UndefinedError when v is undefined (the operations jinja2's Undefined refuses).
void require_defined(const Value& v);

}  // namespace slimkv::jinja
