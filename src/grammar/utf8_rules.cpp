#include "grammar/utf8_rules.h"

#include <fmt/format.h>

namespace slimkv::grammar {

std::string utf8_encode(uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

size_t utf8_decode(std::string_view s, uint32_t& cp) {
  if (s.empty()) return 0;
  const auto b0 = static_cast<uint8_t>(s[0]);
  size_t n = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 0;
  if (n == 0 || s.size() < n) return 0;
  cp = n == 1 ? b0 : n == 2 ? (b0 & 0x1F) : n == 3 ? (b0 & 0x0F) : (b0 & 0x07);
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<uint8_t>(s[k]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  return n;
}

std::vector<Seq> utf8_multibyte_seqs(GrammarBuilder& b) {
  // Well-formed UTF-8 only (Unicode table 3-7): no overlong forms, no surrogates, nothing above U+10FFFF.
  auto range = [&b](int lo, int hi) {
    ByteClass c;
    c.set_range(static_cast<uint8_t>(lo), static_cast<uint8_t>(hi));
    return b.bytes(c);
  };
  // The continuation bytes as shared tail rules, so that the parse after a lead byte is one of few states:
  // fewer distinct parse sets for the mask walk to build (the language is the same).
  const Element c = range(0x80, 0xBF);
  const Element tail1 = b.rule("utf8-tail1", {Seq{c}});
  const Element tail2 = b.rule("utf8-tail2", {Seq{c, tail1}});
  const Element tail3 = b.rule("utf8-tail3", {Seq{c, tail2}});
  ByteClass lead3;  // E1..EC and EE..EF: any two continuation bytes
  lead3.set_range(0xE1, 0xEC);
  lead3.set_range(0xEE, 0xEF);
  return {Seq{range(0xC2, 0xDF), tail1},
          Seq{range(0xE0, 0xE0), range(0xA0, 0xBF), tail1},
          Seq{b.bytes(lead3), tail2},
          Seq{range(0xED, 0xED), range(0x80, 0x9F), tail1},
          Seq{range(0xF0, 0xF0), range(0x90, 0xBF), tail2},
          Seq{range(0xF1, 0xF3), tail3},
          Seq{range(0xF4, 0xF4), range(0x80, 0x8F), tail2}};
}

std::string json_escape_codepoint(uint32_t cp) {
  switch (cp) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\n': return "\\n";
    case '\t': return "\\t";
    case '\r': return "\\r";
    case '\b': return "\\b";
    case '\f': return "\\f";
    default: break;
  }
  if (cp < 0x20) return fmt::format("\\u{:04x}", cp);
  return utf8_encode(cp);
}

}  // namespace slimkv::grammar
