#include "grammar/grammar.h"

#include <fmt/format.h>

namespace slimkv::grammar {
namespace {

std::string class_text(const ByteClass& c) {
  auto one = [](int b) {
    if (b >= 0x21 && b < 0x7f && b != ']' && b != '\\' && b != '-' && b != '^') return std::string(1, char(b));
    return fmt::format("\\x{:02X}", b);
  };
  std::string out = "[";
  for (int b = 0; b < 256;) {
    if (!c.test(static_cast<uint8_t>(b))) {
      ++b;
      continue;
    }
    int e = b;
    while (e + 1 < 256 && c.test(static_cast<uint8_t>(e + 1))) ++e;
    out += one(b);
    if (e > b) out += "-" + one(e);
    b = e + 1;
  }
  return out + "]";
}

}  // namespace

std::string Grammar::dump() const {
  std::string out;
  for (size_t r = 0; r < rule_alts.size(); ++r) {
    out += fmt::format("{}{} ::=", r == root ? "*" : "", rule_names[r]);
    for (size_t a = 0; a < rule_alts[r].size(); ++a) {
      if (a) out += " |";
      for (uint32_t p = rule_alts[r][a]; elements[p].kind != ElementKind::kEnd; ++p) {
        const Element& e = elements[p];
        out += " " + (e.kind == ElementKind::kRule ? rule_names[e.value] : class_text(classes[e.value]));
      }
      if (elements[rule_alts[r][a]].kind == ElementKind::kEnd) out += " \"\"";
    }
    out += "\n";
  }
  return out;
}

}  // namespace slimkv::grammar
