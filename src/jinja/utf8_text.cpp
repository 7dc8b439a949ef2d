#include "jinja/utf8_text.h"

namespace slimkv::jinja {

std::u32string utf8_decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    auto b = static_cast<unsigned char>(s[i]);
    int n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    char32_t c = n == 1 ? b : n == 2 ? (b & 0x1f) : n == 3 ? (b & 0x0f) : (b & 0x07);
    bool ok = n > 0 && i + n <= s.size();
    for (int k = 1; ok && k < n; ++k) {
      auto cb = static_cast<unsigned char>(s[i + k]);
      if ((cb >> 6) != 2) ok = false;
      c = (c << 6) | (cb & 0x3f);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not valid UTF-8.
    if (ok && ((n == 2 && c < 0x80) || (n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10FFFF)) ||
               (c >= 0xD800 && c <= 0xDFFF))) {
      ok = false;
    }
    if (!ok) {
      out.push_back(0xDC80 + b);
      ++i;
      continue;
    }
    out.push_back(c);
    i += n;
  }
  return out;
}

void utf8_append(std::string& out, char32_t c) {
  if (c >= 0xDC80 && c <= 0xDCFF) {
    out.push_back(static_cast<char>(c - 0xDC00));  // surrogateescape: the original byte
  } else if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
  }
}

std::string utf8_encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) utf8_append(out, c);
  return out;
}

bool is_ascii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

size_t utf8_length(std::string_view s) { return is_ascii(s) ? s.size() : utf8_decode(s).size(); }

bool py_isspace(char32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

namespace {
// Letter ranges whose lower and upper case differ by a fixed offset (the common European scripts).
bool latin1_upper(char32_t c) { return (c >= 0xC0 && c <= 0xDE && c != 0xD7); }
bool latin1_lower(char32_t c) { return (c >= 0xE0 && c <= 0xFE && c != 0xF7); }
bool greek_upper(char32_t c) { return c >= 0x391 && c <= 0x3A9 && c != 0x3A2; }
bool greek_lower(char32_t c) { return c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2; }
bool cyr_upper(char32_t c) { return c >= 0x400 && c <= 0x42F; }
bool cyr_lower(char32_t c) { return c >= 0x430 && c <= 0x45F; }
}  // namespace

bool py_iscased_upper(char32_t c) { return (c >= 'A' && c <= 'Z') || latin1_upper(c) || greek_upper(c) || cyr_upper(c); }
bool py_iscased_lower(char32_t c) {
  return (c >= 'a' && c <= 'z') || latin1_lower(c) || c == 0xDF || c == 0xFF || greek_lower(c) || c == 0x3C2 ||
         cyr_lower(c);
}

char32_t py_lower(char32_t c) {
  if ((c >= 'A' && c <= 'Z') || latin1_upper(c) || greek_upper(c)) return c + 32;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}

char32_t py_upper(char32_t c) {
  if ((c >= 'a' && c <= 'z') || latin1_lower(c) || greek_lower(c)) return c - 32;
  if (c == 0x3C2) return 0x3A3;
  if (c == 0xFF) return 0x178;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c;
}

bool py_isalpha(char32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || py_iscased_upper(c) || py_iscased_lower(c) ||
         c == 0xAA || c == 0xBA || (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3040 && c <= 0x30FF) ||
         (c >= 0xAC00 && c <= 0xD7A3);
}

bool py_isdigit(char32_t c) { return c >= '0' && c <= '9'; }

bool py_isprintable(char32_t c) {
  if (c < 0x20 || c == 0x7f) return false;
  if (c >= 0x80 && c <= 0xa0) return false;
  if (c == 0xad || c == 0x1680 || (c >= 0x2000 && c <= 0x200f) || (c >= 0x2028 && c <= 0x202f)) return false;
  if ((c >= 0x205f && c <= 0x206f) || c == 0x3000 || c == 0xfeff || (c >= 0xfff0 && c <= 0xfffb)) return false;
  if ((c >= 0xd800 && c <= 0xdfff) || (c >= 0xe000 && c <= 0xf8ff) || c >= 0xf0000) return false;
  return true;
}

}  // namespace slimkv::jinja
