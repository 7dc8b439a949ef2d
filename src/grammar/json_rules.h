// The JSON building blocks every JSON compiler shares, created once per builder on first use: bounded
// whitespace, strings (escapes, any UTF-8 but control characters), bounded-digit numbers, any value / object /
// array. Owns: JsonRules and the whitespace / digit bounds. Must not know: schema keywords, tokens.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "grammar/grammar_builder.h"

namespace slimkv::grammar {

// Whitespace between JSON tokens (llama.cpp's choice): nothing, one space, or a newline and up to 20 spaces or
// tabs of indentation, so a model cannot loop on whitespace.
inline constexpr uint32_t kMaxIndent = 20;
// Digits: an integer part of at most 16 digits, a fraction of 1-16, an exponent of 1-2, so numbers end.
inline constexpr uint32_t kMaxIntDigits = 16;
inline constexpr uint32_t kMaxFracDigits = 16;
inline constexpr uint32_t kMaxExpDigits = 2;  // so every number fits a double

class JsonRules {
 public:
  explicit JsonRules(GrammarBuilder& b) : b_(b) {}
  Element ws();
  Element string();                                 // any JSON string
  Seq string_length(uint32_t min, uint32_t max);    // a string of min..max characters (an escape counts one)
  Element integer();
  Element number();
  Element boolean();
  Element null();
  Element value();   // any JSON value
  Element object();  // any JSON object
  Element array();   // any JSON array
  Element string_char();  // one JSON string character (raw UTF-8 or an escape)
  // A string whose raw content is none of `names` (an extra object key that must not repeat a listed one).
  // Names with characters outside printable ASCII or needing escapes fall back to any string.
  Element string_except(std::vector<std::string> names);

 private:
  GrammarBuilder& b_;
  std::optional<Element> ws_, string_, chars_, char_, integer_, number_, boolean_, null_;
  std::optional<uint32_t> value_;
  std::optional<Element> object_, array_;
  std::vector<Seq> char_alts();
  Seq except_node(const std::vector<std::string>& names, size_t lo, size_t hi, size_t depth);
};

}  // namespace slimkv::grammar
