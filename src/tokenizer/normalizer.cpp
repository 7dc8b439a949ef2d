#include "tokenizer/normalizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <cstdlib>

#include "core/check.h"
#include "tokenizer/added_tokens.h"

namespace slimkv {

struct Normalizer::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

namespace {

std::string unicode_form(std::string_view text, int options) {
  if (text.empty()) return {};
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                          static_cast<utf8proc_ssize_t>(text.size()), &out,
                                          static_cast<utf8proc_option_t>(UTF8PROC_STABLE | options));
  SLIMKV_CHECK(n >= 0, "normalizer: {}", utf8proc_errmsg(n));
  std::string s(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
  std::free(out);
  return s;
}

std::string lowercase(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t n = 0;
    const uint32_t cp = utf8_decode_at(text, i, n);
    i += n;
    if (cp == 0x130) {  // Rust's char::to_lowercase: the one character whose lowercase is two
      out += "i\xCC\x87";
      continue;
    }
    utf8proc_uint8_t buf[4];
    const auto len = utf8proc_encode_char(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)), buf);
    out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(len));
  }
  return out;
}

bool is_cjk(uint32_t cp) {  // BERT's _is_chinese_char
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// Rebuilds text character by character: f(code point, its bytes, out) appends what replaces it.
template <class F>
std::string map_chars(std::string_view text, F&& f) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t n = 0;
    const uint32_t cp = utf8_decode_at(text, i, n);
    f(cp, text.substr(i, n), out);
    i += n;
  }
  return out;
}

std::string strip_marks(std::string_view text) {
  return map_chars(text, [](uint32_t cp, std::string_view ch, std::string& out) {
    if (utf8proc_category(static_cast<utf8proc_int32_t>(cp)) != UTF8PROC_CATEGORY_MN) out += ch;
  });
}

std::string clean_text(std::string_view text) {  // BertNormalizer: Rust's is_other = Cn, Cc, Cf, Co, Cs
  return map_chars(text, [](uint32_t cp, std::string_view ch, std::string& out) {
    const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
    const bool tab_or_newline = cp == '\t' || cp == '\n' || cp == '\r';
    const bool other = cat == UTF8PROC_CATEGORY_CN || (cat >= UTF8PROC_CATEGORY_CC && cat <= UTF8PROC_CATEGORY_CO);
    if (cp == 0 || cp == 0xFFFD || (other && !tab_or_newline)) return;
    if (tab_or_newline || is_unicode_whitespace(cp)) out += ' ';
    else out += ch;
  });
}

std::string space_cjk(std::string_view text) {
  return map_chars(text, [](uint32_t cp, std::string_view ch, std::string& out) {
    if (!is_cjk(cp)) {
      out += ch;
      return;
    }
    out += ' ';
    out += ch;
    out += ' ';
  });
}

std::string strip(std::string_view text, bool left, bool right) {
  size_t b = 0, e = text.size(), n = 0;
  while (left && b < e && is_unicode_whitespace(utf8_decode_at(text, b, n))) b += n;
  while (right && e > b) {
    size_t s = e - 1;
    while (s > b && (static_cast<unsigned char>(text[s]) & 0xC0) == 0x80) --s;
    if (!is_unicode_whitespace(utf8_decode_at(text, s, n))) break;
    e = s;
  }
  return std::string(text.substr(b, e - b));
}

std::string replace_all(std::string_view text, const std::string& from, const std::string& to) {
  if (from.empty()) return std::string(text);
  std::string out;
  size_t pos = 0;
  for (size_t m; (m = text.find(from, pos)) != std::string_view::npos; pos = m + from.size()) {
    out.append(text.substr(pos, m - pos));
    out += to;
  }
  out.append(text.substr(pos));
  return out;
}

std::string replace_regex(std::string_view text, const pcre2_code* code, const std::string& to) {
  std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> md(pcre2_match_data_create_from_pattern(code, nullptr),
                                                                     pcre2_match_data_free);
  SLIMKV_CHECK(md != nullptr, "normalizer: out of memory");
  std::string out;
  size_t pos = 0, copied = 0;
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  while (pos <= text.size()) {
    const int rc = pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md.get(), nullptr);
    if (rc < 0) break;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    if (ov[1] == ov[0]) {  // an empty match replaces nothing
      if (ov[0] >= text.size()) break;
      size_t n = 0;
      utf8_decode_at(text, ov[0], n);
      pos = ov[0] + n;
      continue;
    }
    out.append(text.substr(copied, ov[0] - copied));
    out += to;
    copied = pos = ov[1];
  }
  out.append(text.substr(copied));
  return out;
}

}  // namespace

Normalizer::Normalizer(std::vector<NormalizeStep> steps) : steps_(std::move(steps)) {
  for (const NormalizeStep& s : steps_) {
    if (s.kind != NormalizeStep::kReplace || !s.regex) {
      regexes_.push_back(nullptr);
      continue;
    }
    auto c = std::make_shared<Compiled>();
    int err = 0;
    PCRE2_SIZE at = 0;
    c->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(s.pattern.data()), s.pattern.size(), PCRE2_UTF | PCRE2_UCP,
                            &err, &at, nullptr);
    if (c->code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof(msg));
      fail("normalizer regex '{}' does not compile: {} (at offset {})", s.pattern, reinterpret_cast<char*>(msg), at);
    }
    regexes_.push_back(std::move(c));
  }
}

std::string Normalizer::apply(std::string_view text) const {
  std::string s(text);
  for (size_t i = 0; i < steps_.size(); ++i) {
    const NormalizeStep& st = steps_[i];
    switch (st.kind) {
      case NormalizeStep::kNfc: s = unicode_form(s, UTF8PROC_COMPOSE); break;
      case NormalizeStep::kNfd: s = unicode_form(s, UTF8PROC_DECOMPOSE); break;
      case NormalizeStep::kNfkc: s = unicode_form(s, UTF8PROC_COMPOSE | UTF8PROC_COMPAT); break;
      case NormalizeStep::kNfkd: s = unicode_form(s, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT); break;
      case NormalizeStep::kLowercase: s = lowercase(s); break;
      case NormalizeStep::kStrip: s = strip(s, st.strip_left, st.strip_right); break;
      case NormalizeStep::kReplace:
        s = st.regex ? replace_regex(s, regexes_[i]->code, st.content) : replace_all(s, st.pattern, st.content);
        break;
      case NormalizeStep::kStripAccents: s = strip_marks(s); break;
      case NormalizeStep::kCleanText: s = clean_text(s); break;
      case NormalizeStep::kSpaceCjk: s = space_cjk(s); break;
      case NormalizeStep::kPrepend:
        if (!s.empty()) s.insert(0, st.content);
        break;
    }
  }
  return s;
}

}  // namespace slimkv
