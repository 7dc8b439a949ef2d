#include "jinja/lexer.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fmt/format.h>

#include "jinja/template_error.h"
#include "jinja/utf8_text.h"

namespace slimkv::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Python's str.rstrip() (any Unicode whitespace) on UTF-8 text.
std::string rstrip_py(const std::string& s) {
  std::u32string u = utf8_decode(s);
  size_t n = u.size();
  while (n > 0 && py_isspace(u[n - 1])) --n;
  return is_ascii(s) ? s.substr(0, n) : utf8_encode(u.substr(0, n));
}

// \s+ over the whole of s (Python's Unicode whitespace).
bool all_space(const std::string& s) {
  if (s.empty()) return false;
  for (char32_t c : utf8_decode(s)) {
    if (!py_isspace(c)) return false;
  }
  return true;
}

// Newlines as jinja2 reads them: \r\n and \r become \n, one trailing newline is dropped.
std::string normalize_source(std::string_view src) {
  std::string s;
  s.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\r') {
      s.push_back('\n');
      if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
    } else {
      s.push_back(src[i]);
    }
  }
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

class Lexer {
 public:
  Lexer(std::string_view src, const LexerOptions& opt) : src_(normalize_source(src)), opt_(opt) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) root_step();
    out_.push_back({TokenType::Eof, "", line_});
    return std::move(out_);
  }

 private:
  std::string src_;
  LexerOptions opt_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> out_;

  [[noreturn]] void fail(const std::string& msg) { raise(ErrorKind::Syntax, fmt::format("{} (line {})", msg, line_)); }
  bool at(size_t p, std::string_view s) const { return src_.compare(p, s.size(), s) == 0; }
  char ch(size_t p) const { return p < src_.size() ? src_[p] : '\0'; }

  void emit(TokenType t, std::string v) {
    int l = line_;
    for (char c : v) line_ += c == '\n';
    out_.push_back({t, std::move(v), l});
  }
  void advance_to(size_t p) {  // consumes src_[pos_, p) that produced no token
    for (size_t i = pos_; i < p; ++i) line_ += src_[i] == '\n';
    pos_ = p;
  }
  size_t skip_spaces(size_t p) const {
    while (p < src_.size() && is_space(src_[p])) ++p;
    return p;
  }

  // {%(-|+|)\s*raw\s*(-%}\s*|%}) at p: returns the end, or npos.
  size_t match_raw_begin(size_t p, const char* word) const {
    if (!at(p, "{%")) return std::string::npos;
    size_t q = p + 2;
    if (ch(q) == '-' || ch(q) == '+') ++q;
    q = skip_spaces(q);
    std::string_view w(word);
    if (!at(q, w)) return std::string::npos;
    q = skip_spaces(q + w.size());
    if (at(q, "-%}")) return skip_spaces(q + 3);
    if (word == std::string_view("endraw") && at(q, "+%}")) return q + 3;
    if (at(q, "%}")) return q + 2 + (word == std::string_view("endraw") && opt_.trim_blocks && ch(q + 2) == '\n');
    return std::string::npos;
  }

  // The text before a tag, with the tag's whitespace control (`-`: strip all; else lstrip_blocks for {% and {#).
  void emit_text(std::string text, char sign, bool is_var) {
    if (sign == '-') {
      text = rstrip_py(text);
    } else if (sign != '+' && opt_.lstrip_blocks && !is_var) {
      size_t l_pos = text.rfind('\n');
      l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
      if ((l_pos > 0 || line_starting_) && all_space(text.substr(l_pos))) text.resize(l_pos);
    }
    if (!text.empty()) emit(TokenType::Data, std::move(text));
  }

  void root_step() {
    size_t k = pos_;
    while ((k = src_.find('{', k)) != std::string::npos) {
      char n = ch(k + 1);
      if (n == '{' || n == '%' || n == '#') break;
      ++k;
    }
    if (k == std::string::npos) {
      emit(TokenType::Data, src_.substr(pos_));
      pos_ = src_.size();
      return;
    }
    char kind = src_[k + 1];
    char sign = (ch(k + 2) == '-' || ch(k + 2) == '+') ? ch(k + 2) : '\0';
    std::string text = src_.substr(pos_, k - pos_);
    const int text_end_line = line_ + static_cast<int>(std::count(text.begin(), text.end(), '\n'));
    size_t raw_end = kind == '%' ? match_raw_begin(k, "raw") : std::string::npos;
    emit_text(std::move(text), sign, kind == '{');
    line_ = text_end_line;  // lines count the source, whatever the whitespace control dropped
    pos_ = k;
    if (raw_end != std::string::npos) return lex_raw(raw_end);
    line_starting_ = false;
    advance_to(k + 2 + (sign ? 1 : 0));
    if (kind == '#') return lex_comment();
    emit(kind == '%' ? TokenType::BlockBegin : TokenType::VarBegin, kind == '%' ? "{%" : "{{");
    lex_tag(kind == '%');
  }

  void lex_raw(size_t body) {
    line_starting_ = src_[body - 1] == '\n';
    advance_to(body);
    for (size_t k = body; (k = src_.find("{%", k)) != std::string::npos; ++k) {
      size_t end = match_raw_begin(k, "endraw");
      if (end == std::string::npos) continue;
      char sign = (ch(k + 2) == '-' || ch(k + 2) == '+') ? ch(k + 2) : '\0';
      std::string text = src_.substr(body, k - body);
      int before = line_;
      emit_text(std::move(text), sign, false);
      line_ = before;
      advance_to(end);
      line_starting_ = src_[end - 1] == '\n';
      return;
    }
    fail("Missing end of raw directive");
  }

  void lex_comment() {
    for (size_t j = pos_; j < src_.size(); ++j) {
      size_t end = std::string::npos;
      if (at(j, "+#}")) end = j + 3;
      else if (at(j, "-#}")) end = skip_spaces(j + 3);
      else if (at(j, "#}")) end = j + 2 + (opt_.trim_blocks && ch(j + 2) == '\n');
      if (end == std::string::npos) continue;
      advance_to(end);
      line_starting_ = src_[end - 1] == '\n';
      return;
    }
    fail("Missing end of comment tag");
  }

  // The end of the tag at pos_, or npos: -%}\s* | +%} | %}\n?  (blocks), -}}\s* | }} (variables).
  size_t match_tag_end(bool block) const {
    if (block) {
      if (at(pos_, "+%}")) return pos_ + 3;
      if (at(pos_, "-%}")) return skip_spaces(pos_ + 3);
      if (at(pos_, "%}")) return pos_ + 2 + (opt_.trim_blocks && ch(pos_ + 2) == '\n');
    } else {
      if (at(pos_, "-}}")) return skip_spaces(pos_ + 3);
      if (at(pos_, "}}")) return pos_ + 2;
    }
    return std::string::npos;
  }

  void lex_tag(bool block) {
    std::string balance;
    while (pos_ < src_.size()) {
      if (balance.empty()) {
        size_t end = match_tag_end(block);
        if (end != std::string::npos) {
          emit(block ? TokenType::BlockEnd : TokenType::VarEnd, block ? "%}" : "}}");
          line_starting_ = src_[end - 1] == '\n';
          advance_to(end);
          return;
        }
      }
      char c = src_[pos_];
      if (is_space(c)) {
        advance_to(skip_spaces(pos_));
      } else if (lex_number()) {
      } else if (name_start(c)) {
        size_t e = pos_;
        while (e < src_.size() && name_char(src_[e])) ++e;
        emit(TokenType::Name, src_.substr(pos_, e - pos_));
        pos_ = e;
      } else if (c == '\'' || c == '"') {
        lex_string(c);
      } else {
        lex_operator(balance);
      }
    }
    fail("unexpected end of template, the tag was never closed");
  }

  size_t digits_(size_t p) const {  // (\d+_)*\d+ from p; returns the end or p
    size_t e = p;
    while (is_digit(ch(e))) {
      while (is_digit(ch(e))) ++e;
      if (ch(e) == '_' && is_digit(ch(e + 1))) ++e;
    }
    return e;
  }

  bool lex_number() {
    if (!is_digit(src_[pos_]) || (pos_ > 0 && src_[pos_ - 1] == '.')) return lex_integer();
    size_t e = digits_(pos_);
    size_t f = e;
    if (ch(f) == '.' && is_digit(ch(f + 1))) f = digits_(f + 1);
    size_t x = f;
    bool has_exp = false;
    if (ch(x) == 'e' || ch(x) == 'E') {
      size_t y = x + 1;
      if (ch(y) == '+' || ch(y) == '-') ++y;
      if (is_digit(ch(y))) x = digits_(y), has_exp = true;
    }
    if (f == e && !has_exp) return lex_integer();
    std::string v;
    for (size_t i = pos_; i < x; ++i) {
      if (src_[i] != '_') v.push_back(src_[i]);
    }
    emit(TokenType::Float, v);
    pos_ = x;
    return true;
  }

  bool lex_integer();
  void lex_string(char quote);
  void lex_operator(std::string& balance);
};

bool Lexer::lex_integer() {
  if (!is_digit(src_[pos_])) return false;
  char p = static_cast<char>(std::tolower(static_cast<unsigned char>(ch(pos_ + 1))));
  int base = 10;
  size_t s = pos_, e = pos_;
  if (src_[pos_] == '0' && (p == 'b' || p == 'o' || p == 'x')) {
    base = p == 'b' ? 2 : p == 'o' ? 8 : 16;
    s = e = pos_ + 2;
    auto ok = [&](char c) { return base == 16 ? std::isxdigit(static_cast<unsigned char>(c)) != 0 : (c >= '0' && c < '0' + base); };
    while (true) {
      size_t q = ch(e) == '_' ? e + 1 : e;
      if (!ok(ch(q))) break;
      e = q + 1;
    }
    if (e == s) base = 10, s = e = pos_;  // "0x" without digits: just 0
  }
  if (base == 10) {
    const bool zero = src_[pos_] == '0';
    auto digit_ok = [&](char c) { return zero ? c == '0' : is_digit(c); };
    e = pos_ + 1;
    while (digit_ok(ch(e)) || (ch(e) == '_' && digit_ok(ch(e + 1)))) e += ch(e) == '_' ? 2 : 1;
  }
  unsigned __int128 v = 0;
  for (size_t i = s; i < e; ++i) {
    if (src_[i] == '_') continue;
    int d = std::isdigit(static_cast<unsigned char>(src_[i])) ? src_[i] - '0' : std::tolower(src_[i]) - 'a' + 10;
    v = v * base + d;
    if (v > static_cast<unsigned __int128>(INT64_MAX)) fail("integer literal too large (the engine's ints are 64-bit)");
  }
  emit(TokenType::Integer, std::to_string(static_cast<int64_t>(v)));
  pos_ = e;
  return true;
}

void Lexer::lex_string(char quote) {
  size_t e = pos_ + 1;
  while (e < src_.size() && src_[e] != quote) e += src_[e] == '\\' ? 2 : 1;
  if (e >= src_.size()) fail("unexpected char '" + std::string(1, quote) + "': unterminated string");
  std::string raw = src_.substr(pos_ + 1, e - pos_ - 1), v;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\\' || i + 1 >= raw.size()) {
      v.push_back(raw[i]);
      continue;
    }
    char c = raw[++i];
    auto hex = [&](int n) {
      char32_t cp = 0;
      for (int k = 0; k < n; ++k) {
        if (i + 1 >= raw.size() || !std::isxdigit(static_cast<unsigned char>(raw[i + 1]))) fail("truncated \\x, \\u or \\U escape");
        char h = static_cast<char>(std::tolower(static_cast<unsigned char>(raw[++i])));
        cp = cp * 16 + (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : h - 'a' + 10);
      }
      if (cp > 0x10FFFF) fail("illegal Unicode character");
      utf8_append(v, cp);
    };
    switch (c) {
      case '\n': break;
      case '\\': v.push_back('\\'); break;
      case '\'': v.push_back('\''); break;
      case '"': v.push_back('"'); break;
      case 'a': v.push_back('\a'); break;
      case 'b': v.push_back('\b'); break;
      case 'f': v.push_back('\f'); break;
      case 'n': v.push_back('\n'); break;
      case 'r': v.push_back('\r'); break;
      case 't': v.push_back('\t'); break;
      case 'v': v.push_back('\v'); break;
      case 'x': hex(2); break;
      case 'u': hex(4); break;
      case 'U': hex(8); break;
      case 'N': fail("\\N{...} escapes are not supported");
      default:
        if (c >= '0' && c <= '7') {
          char32_t cp = c - '0';
          for (int k = 0; k < 2 && i + 1 < raw.size() && raw[i + 1] >= '0' && raw[i + 1] <= '7'; ++k) cp = cp * 8 + (raw[++i] - '0');
          utf8_append(v, cp);
        } else {
          v.push_back('\\');
          v.push_back(c);
        }
    }
  }
  int l = line_;
  advance_to(e + 1);
  out_.push_back({TokenType::String, std::move(v), l});
}

void Lexer::lex_operator(std::string& balance) {
  static const char* ops[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]", "(", ")",
                              "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"};
  for (const char* op : ops) {
    std::string_view o(op);
    if (!at(pos_, o)) continue;
    char c = o[0];
    if (o.size() == 1 && (c == '(' || c == '[' || c == '{')) balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    if (o.size() == 1 && (c == ')' || c == ']' || c == '}')) {
      if (balance.empty()) fail(fmt::format("unexpected '{}'", c));
      if (balance.back() != c) fail(fmt::format("unexpected '{}', expected '{}'", c, balance.back()));
      balance.pop_back();
    }
    emit(TokenType::Operator, std::string(o));
    pos_ += o.size();
    return;
  }
  fail(fmt::format("unexpected char '{}'", src_[pos_]));
}

}  // namespace

std::vector<Token> tokenize(std::string_view source, const LexerOptions& opt) { return Lexer(source, opt).run(); }

}  // namespace slimkv::jinja
