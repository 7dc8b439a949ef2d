#include "grammar/regex_compiler.h"

#include <cctype>
#include <string>
#include <vector>

#include "grammar/grammar_error.h"
#include "grammar/utf8_rules.h"

namespace slimkv::grammar {
namespace {

// A character class: ASCII members as bytes, non-ASCII members as code points; negated = every UTF-8 character
// except the ASCII members.
struct RegexCharSet {
  ByteClass ascii;
  std::vector<uint32_t> wide;
  bool negated = false;
};

class RegexParser {
 public:
  RegexParser(GrammarBuilder& b, std::string_view p, bool json) : b_(b), p_(p), json_(json) {}

  Seq parse() {
    if (i_ < p_.size() && p_[i_] == '^') ++i_;
    Seq s = parse_alt();
    if (i_ < p_.size()) fail_here("unbalanced ')'");
    return s;
  }

 private:
  [[noreturn]] void fail_here(const std::string& what) const {
    grammar_fail("regex '{}': {} at offset {}", std::string(p_), what, i_);
  }
  bool at_end() const { return i_ >= p_.size(); }
  std::string name() { return "regex" + std::to_string(counter_++); }

  Seq parse_alt() {
    std::vector<Seq> alts{parse_seq()};
    while (!at_end() && p_[i_] == '|') {
      ++i_;
      alts.push_back(parse_seq());
    }
    if (alts.size() == 1) return alts[0];
    return Seq{b_.rule(name(), alts)};
  }

  Seq parse_seq() {
    Seq out;
    while (!at_end() && p_[i_] != '|' && p_[i_] != ')') {
      if (p_[i_] == '$' && i_ + 1 == p_.size()) {  // the end anchor: matching is anchored anyway
        ++i_;
        break;
      }
      Seq atom = parse_atom();
      seq_append(out, parse_quantifiers(atom));
    }
    return out;
  }

  Seq parse_quantifiers(Seq atom) {
    while (!at_end()) {
      char c = p_[i_];
      uint32_t lo, hi;
      if (c == '?') lo = 0, hi = 1;
      else if (c == '*') lo = 0, hi = kUnbounded;
      else if (c == '+') lo = 1, hi = kUnbounded;
      else if (c == '{' && i_ + 1 < p_.size() && std::isdigit(static_cast<unsigned char>(p_[i_ + 1]))) {
        parse_braces(lo, hi);
        --i_;
      } else {
        break;
      }
      ++i_;
      if (!at_end() && (p_[i_] == '?' || p_[i_] == '+')) ++i_;  // lazy / possessive: same language
      atom = b_.repeat(atom, lo, hi, name());
    }
    return atom;
  }

  uint32_t parse_number() {
    uint64_t v = 0;
    if (at_end() || !std::isdigit(static_cast<unsigned char>(p_[i_]))) fail_here("expected a count");
    while (!at_end() && std::isdigit(static_cast<unsigned char>(p_[i_]))) {
      v = v * 10 + static_cast<uint64_t>(p_[i_++] - '0');
      if (v > kMaxRepeat) fail_here("repetition count above " + std::to_string(kMaxRepeat));
    }
    return static_cast<uint32_t>(v);
  }

  void parse_braces(uint32_t& lo, uint32_t& hi) {  // at '{'; leaves i_ after '}'
    ++i_;
    lo = parse_number();
    hi = lo;
    if (!at_end() && p_[i_] == ',') {
      ++i_;
      hi = (!at_end() && p_[i_] == '}') ? kUnbounded : parse_number();
    }
    if (at_end() || p_[i_] != '}') fail_here("malformed {m,n}");
    ++i_;
  }

  Seq parse_atom() {
    char c = p_[i_];
    if (c == '(') return parse_group();
    if (c == '[') return charset_seq(parse_class());
    if (c == '.') {
      ++i_;
      RegexCharSet s;
      s.negated = true;
      s.ascii.set('\n');
      return charset_seq(s);
    }
    if (c == '\\') {
      RegexCharSet s;
      uint32_t cp;
      if (parse_escape(s, cp)) return charset_seq(s);
      return codepoint_seq(cp);
    }
    if (c == '*' || c == '+' || c == '?' || c == '{') fail_here(std::string("nothing to repeat before '") + c + "'");
    if (c == '^' || c == '$') fail_here("an anchor inside the pattern is not supported");
    return codepoint_seq(take_codepoint());
  }

  Seq parse_group() {
    ++i_;
    if (p_.substr(i_, 2) == "?:") {
      i_ += 2;
    } else if (p_.substr(i_, 3) == "?P<" || (p_.substr(i_, 2) == "?<" && p_.substr(i_, 3) != "?<=" &&
                                              p_.substr(i_, 3) != "?<!")) {
      size_t close = p_.find('>', i_);
      if (close == std::string_view::npos) fail_here("unterminated group name");
      i_ = close + 1;
    } else if (!at_end() && p_[i_] == '?') {
      fail_here("lookaround, flags and other (?...) groups are not supported");
    }
    Seq inner = parse_alt();
    if (at_end() || p_[i_] != ')') fail_here("missing ')'");
    ++i_;
    return inner;
  }

  uint32_t take_codepoint() {
    uint32_t cp;
    size_t n = utf8_decode(p_.substr(i_), cp);
    if (n == 0) fail_here("invalid UTF-8");
    i_ += n;
    return cp;
  }

  // At '\'. Returns true for a class escape (\d \w \s and negations, filled into `s`), else false with the
  // escaped code point in `cp`.
  bool parse_escape(RegexCharSet& s, uint32_t& cp) {
    ++i_;
    if (at_end()) fail_here("trailing '\\'");
    char c = p_[i_++];
    switch (c) {
      case 'd': case 'D': s.ascii.set_range('0', '9'); s.negated = c == 'D'; return true;
      case 'w': case 'W':
        s.ascii.set_range('a', 'z'), s.ascii.set_range('A', 'Z'), s.ascii.set_range('0', '9'), s.ascii.set('_');
        s.negated = c == 'W';
        return true;
      case 's': case 'S':
        for (char w : {' ', '\t', '\n', '\r', '\f', '\v'}) s.ascii.set(static_cast<uint8_t>(w));
        s.negated = c == 'S';
        return true;
      case 'n': cp = '\n'; return false;
      case 't': cp = '\t'; return false;
      case 'r': cp = '\r'; return false;
      case 'f': cp = '\f'; return false;
      case 'v': cp = '\v'; return false;
      case '0': cp = 0; return false;
      case 'x': cp = parse_hex(2); return false;
      case 'u': cp = parse_hex(4); return false;
      default: break;
    }
    if (std::isalnum(static_cast<unsigned char>(c)))
      fail_here(std::string("unsupported escape '\\") + c + "' (backreferences, \\b, \\p{...} and the like)");
    cp = static_cast<uint8_t>(c);
    return false;
  }

  uint32_t parse_hex(int digits) {
    uint32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      if (at_end() || !std::isxdigit(static_cast<unsigned char>(p_[i_]))) fail_here("malformed hex escape");
      char h = p_[i_++];
      v = v * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (h | 0x20) - 'a' + 10);
    }
    return v;
  }

  // One class member: a code point (returned), or a class escape merged into `s` (returns UINT32_MAX).
  uint32_t class_member(RegexCharSet& s) {
    if (p_[i_] == '\\') {
      RegexCharSet sub;
      uint32_t cp;
      if (!parse_escape(sub, cp)) return cp;
      if (sub.negated) fail_here("a negated class escape inside [...] is not supported");
      s.ascii |= sub.ascii;
      return UINT32_MAX;
    }
    if (p_.substr(i_, 2) == "[:") fail_here("POSIX classes [:name:] are not supported");
    return take_codepoint();
  }

  RegexCharSet parse_class() {
    ++i_;
    RegexCharSet s;
    if (!at_end() && p_[i_] == '^') s.negated = true, ++i_;
    bool first = true;
    while (true) {
      if (at_end()) fail_here("unterminated [...]");
      if (p_[i_] == ']' && !first) break;
      first = false;
      uint32_t lo = class_member(s);
      if (lo == UINT32_MAX) continue;
      uint32_t hi = lo;
      if (i_ + 1 < p_.size() && p_[i_] == '-' && p_[i_ + 1] != ']') {
        ++i_;
        hi = class_member(s);
        if (hi == UINT32_MAX || hi < lo) fail_here("malformed range in [...]");
      }
      add_range(s, lo, hi);
    }
    ++i_;
    return s;
  }

  void add_range(RegexCharSet& s, uint32_t lo, uint32_t hi) {
    if (hi < 0x80) {
      s.ascii.set_range(static_cast<uint8_t>(lo), static_cast<uint8_t>(hi));
      return;
    }
    if (s.negated) fail_here("non-ASCII characters in a negated class are not supported");
    if (hi - lo > 256) fail_here("non-ASCII class ranges wider than 256 code points are not supported");
    for (uint32_t cp = lo; cp <= hi; ++cp) {
      if (cp < 0x80) s.ascii.set(static_cast<uint8_t>(cp));
      else s.wide.push_back(cp);
    }
  }

  // Emits one code point: raw UTF-8, or JSON-escaped inside a JSON string.
  Seq codepoint_seq(uint32_t cp) {
    std::string text = json_ ? json_escape_codepoint(cp) : utf8_encode(cp);
    return b_.literal(text);
  }

  Seq charset_seq(const RegexCharSet& s) {
    ByteClass ascii;
    for (int c = 0; c < 0x80; ++c) {
      bool in = s.ascii.test(static_cast<uint8_t>(c)) != s.negated;
      if (in && !(json_ && (c < 0x20 || c == '"' || c == '\\'))) ascii.set(static_cast<uint8_t>(c));
    }
    std::vector<Seq> alts;
    if (!ascii.empty()) alts.push_back(Seq{b_.bytes(ascii)});
    if (s.negated) {
      for (const Seq& m : utf8_multibyte_seqs(b_)) alts.push_back(m);
    } else {
      for (uint32_t cp : s.wide) alts.push_back(codepoint_seq(cp));
    }
    if (alts.empty()) fail_here("a class that matches nothing");
    if (alts.size() == 1) return alts[0];
    return Seq{b_.rule(name(), alts)};
  }

  GrammarBuilder& b_;
  std::string_view p_;
  bool json_;
  size_t i_ = 0;
  int counter_ = 0;
};

}  // namespace

Seq regex_to_seq(GrammarBuilder& b, std::string_view pattern, bool json_string_body) {
  return RegexParser(b, pattern, json_string_body).parse();
}

std::shared_ptr<const Grammar> compile_regex(std::string_view pattern) {
  GrammarBuilder b;
  uint32_t root = b.declare("root");
  b.define(root, {regex_to_seq(b, pattern, false)});
  return b.build(root);
}

}  // namespace slimkv::grammar
