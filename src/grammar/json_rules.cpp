#include "grammar/json_rules.h"

#include <algorithm>

#include "grammar/utf8_rules.h"

namespace slimkv::grammar {

Element JsonRules::ws() {
  if (!ws_) {
    ByteClass indent;
    indent.set(' ');
    indent.set('\t');
    Seq newline = seq(b_.byte('\n'), b_.repeat(Seq{b_.bytes(indent)}, 0, kMaxIndent, "ws-indent"));
    ws_ = b_.rule("ws", {Seq{}, b_.literal(" "), newline});
  }
  return *ws_;
}

// A character inside a JSON string: printable ASCII but '"' and '\', a multi-byte UTF-8 character, or an escape.
std::vector<Seq> JsonRules::char_alts() {
  ByteClass plain;
  plain.set_range(0x20, 0x7F);
  plain.clear('"');
  plain.clear('\\');
  ByteClass esc, hex;
  for (char c : std::string("\"\\/bfnrt")) esc.set(static_cast<uint8_t>(c));
  hex.set_range('0', '9'), hex.set_range('a', 'f'), hex.set_range('A', 'F');
  const Element h = b_.bytes(hex);
  std::vector<Seq> alts{Seq{b_.bytes(plain)}};
  for (const Seq& m : utf8_multibyte_seqs(b_)) alts.push_back(m);
  alts.push_back(Seq{b_.byte('\\'), b_.bytes(esc)});
  alts.push_back(Seq{b_.byte('\\'), b_.byte('u'), h, h, h, h});
  return alts;
}

Element JsonRules::string_char() {
  if (!char_) char_ = b_.rule("char", char_alts());
  return *char_;
}

Element JsonRules::string() {
  if (!string_) {
    // chars ::= plain chars | ... | "" with the character alternatives inlined: one rule expansion per byte.
    uint32_t chars = b_.declare("chars");
    std::vector<Seq> alts = char_alts();
    for (Seq& a : alts) a.push_back(GrammarBuilder::ref(chars));
    alts.push_back(Seq{});
    b_.define(chars, alts);
    chars_ = GrammarBuilder::ref(chars);
    string_ = b_.rule("string", {seq(b_.byte('"'), *chars_, b_.byte('"'))});
  }
  return *string_;
}

Element JsonRules::string_except(std::vector<std::string> names) {
  for (const std::string& n : names)
    for (char c : n)
      if (c < 0x20 || c > 0x7E || c == '"' || c == '\\') return string();
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  string();  // defines chars_
  return b_.rule("key-except", {seq(b_.byte('"'), except_node(names, 0, names.size(), 0))});
}

// After a '"' and `depth` bytes shared by names[lo, hi): close (unless a name ends here), follow a name's next
// byte, or leave every name with any other character and then anything.
Seq JsonRules::except_node(const std::vector<std::string>& names, size_t lo, size_t hi, size_t depth) {
  std::vector<Seq> alts;
  const Seq rest = seq(*chars_, b_.byte('"'));
  size_t i = lo;
  if (i < hi && names[i].size() == depth) ++i;  // a name ends here: closing now would repeat it
  else alts.push_back(Seq{b_.byte('"')});
  std::vector<Seq> char_choices = char_alts();
  ByteClass others = b_.grammar_class(char_choices[0][0]);  // plain characters
  while (i < hi) {
    const auto c = static_cast<uint8_t>(names[i][depth]);
    size_t j = i;
    while (j < hi && static_cast<uint8_t>(names[j][depth]) == c) ++j;
    others.clear(c);
    alts.push_back(seq(b_.byte(c), except_node(names, i, j, depth + 1)));
    i = j;
  }
  if (!others.empty()) alts.push_back(seq(b_.bytes(others), rest));
  for (size_t k = 1; k < char_choices.size(); ++k) alts.push_back(seq(char_choices[k], rest));  // UTF-8, escapes
  return Seq{b_.rule("key-except-" + std::to_string(depth), alts)};
}

Seq JsonRules::string_length(uint32_t min, uint32_t max) {
  return seq(b_.byte('"'), b_.repeat(Seq{string_char()}, min, max, "string-chars"), b_.byte('"'));
}

Element JsonRules::integer() {
  if (!integer_) {
    ByteClass digit, nonzero;
    digit.set_range('0', '9');
    nonzero.set_range('1', '9');
    Seq digits = seq(b_.bytes(nonzero), b_.repeat(Seq{b_.bytes(digit)}, 0, kMaxIntDigits - 1, "int-digits"));
    Element magnitude = b_.rule("int-magnitude", {b_.literal("0"), digits});
    integer_ = b_.rule("integer", {seq(b_.optional(b_.literal("-"), "minus"), magnitude)});
  }
  return *integer_;
}

Element JsonRules::number() {
  if (!number_) {
    ByteClass digit, e, sign;
    digit.set_range('0', '9');
    e.set('e'), e.set('E'), sign.set('-'), sign.set('+');
    Element frac = b_.optional(seq(b_.byte('.'), b_.repeat(Seq{b_.bytes(digit)}, 1, kMaxFracDigits, "frac-digits")),
                               "frac");
    Element exp = b_.optional(seq(b_.bytes(e), b_.optional(Seq{b_.bytes(sign)}, "exp-sign"),
                                  b_.repeat(Seq{b_.bytes(digit)}, 1, kMaxExpDigits, "exp-digits")),
                              "exp");
    number_ = b_.rule("number", {seq(integer(), frac, exp)});
  }
  return *number_;
}

Element JsonRules::boolean() {
  if (!boolean_) boolean_ = b_.rule("boolean", {b_.literal("true"), b_.literal("false")});
  return *boolean_;
}

Element JsonRules::null() {
  if (!null_) null_ = b_.rule("null", {b_.literal("null")});
  return *null_;
}

Element JsonRules::value() {
  if (!value_) {
    value_ = b_.declare("value");
    b_.define(*value_, {Seq{object()}, Seq{array()}, Seq{string()}, Seq{number()}, Seq{boolean()}, Seq{null()}});
  }
  return GrammarBuilder::ref(*value_);
}

Element JsonRules::object() {
  if (!object_) {
    uint32_t id = b_.declare("object");
    object_ = GrammarBuilder::ref(id);
    Element w = ws();
    Seq kv = seq(string(), w, b_.byte(':'), w, value());
    Element more = b_.star(seq(w, b_.byte(','), w, kv), "object-more");
    b_.define(id, {seq(b_.byte('{'), w, b_.byte('}')), seq(b_.byte('{'), w, kv, more, w, b_.byte('}'))});
  }
  return *object_;
}

Element JsonRules::array() {
  if (!array_) {
    uint32_t id = b_.declare("array");
    array_ = GrammarBuilder::ref(id);
    Element w = ws();
    Element more = b_.star(seq(w, b_.byte(','), w, value()), "array-more");
    b_.define(id, {seq(b_.byte('['), w, b_.byte(']')), seq(b_.byte('['), w, value(), more, w, b_.byte(']'))});
  }
  return *array_;
}

}  // namespace slimkv::grammar
