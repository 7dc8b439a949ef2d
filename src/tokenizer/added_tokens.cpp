#include "tokenizer/added_tokens.h"

#include <utf8proc.h>

#include <algorithm>

#include "core/check.h"

namespace slimkv {

uint32_t utf8_decode_at(std::string_view s, size_t pos, size_t& len) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  auto cont = [&](size_t k) { return pos + k < s.size() ? static_cast<unsigned char>(s[pos + k]) & 0x3F : 0; };
  if (b0 < 0x80) {
    len = 1;
    return b0;
  }
  if ((b0 >> 5) == 0x6) {
    len = 2;
    return ((b0 & 0x1F) << 6) | cont(1);
  }
  if ((b0 >> 4) == 0xE) {
    len = 3;
    return ((b0 & 0x0F) << 12) | (cont(1) << 6) | cont(2);
  }
  if ((b0 >> 3) == 0x1E) {
    len = 4;
    return ((b0 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3);
  }
  len = 1;
  return 0xFFFD;
}

bool is_unicode_whitespace(uint32_t cp) {  // the White_Space property (Rust's char::is_whitespace)
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

bool is_word_char(uint32_t cp) {
  if (cp == '_') return true;
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
         (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
}

namespace {

uint64_t edge_key(int32_t node, unsigned char byte) { return (static_cast<uint64_t>(node) << 8) | byte; }

uint32_t last_char(std::string_view s, size_t end) {  // the character ending at byte `end` (> 0)
  size_t b = end - 1;
  while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  size_t len = 0;
  return utf8_decode_at(s, b, len);
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) {
  terminal_.push_back(-1);
  for (AddedToken& t : tokens) {
    if (t.content.empty()) continue;
    const auto index = static_cast<int32_t>(tokens_.size());
    int32_t node = 0;
    for (char c : t.content) {
      auto [it, added] = edges_.emplace(edge_key(node, static_cast<unsigned char>(c)),
                                        static_cast<int32_t>(terminal_.size()));
      if (added) terminal_.push_back(-1);
      node = it->second;
    }
    if (terminal_[node] < 0) terminal_[node] = index;  // the same content twice: the first entry wins
    tokens_.push_back(std::move(t));
  }
}

int32_t AddedTokenMatcher::longest_at(std::string_view text, size_t pos, size_t& len) const {
  int32_t node = 0, best = -1;
  for (size_t i = pos; i < text.size(); ++i) {
    auto it = edges_.find(edge_key(node, static_cast<unsigned char>(text[i])));
    if (it == edges_.end()) break;
    node = it->second;
    if (terminal_[node] >= 0) {
      best = terminal_[node];
      len = i + 1 - pos;
    }
  }
  return best;
}

std::vector<TextSpan> AddedTokenMatcher::split(std::string_view text, bool parse_special) const {
  std::vector<TextSpan> spans;
  size_t done = 0;  // end of the last span emitted
  for (size_t pos = 0; !tokens_.empty() && pos < text.size();) {
    size_t len = 0;
    const int32_t index = longest_at(text, pos, len);
    if (index < 0) {
      ++pos;
      continue;
    }
    const AddedToken& t = tokens_[index];
    size_t begin = pos, end = pos + len;
    pos = end;  // the scan goes on after the match whether or not it is kept (one leftmost-longest pass)
    if (t.special && !parse_special) continue;
    if (t.single_word) {
      bool word_before = begin > 0 && is_word_char(last_char(text, begin));
      size_t n = 0;
      bool word_after = end < text.size() && is_word_char(utf8_decode_at(text, end, n));
      if (word_before || word_after) continue;
    }
    if (t.lstrip) {
      size_t b = begin;
      while (b > done && is_unicode_whitespace(last_char(text, b))) {
        while (b > 0 && (static_cast<unsigned char>(text[b - 1]) & 0xC0) == 0x80) --b;
        --b;
      }
      begin = b;
    }
    if (t.rstrip) {
      size_t n = 0;
      while (end < text.size() && is_unicode_whitespace(utf8_decode_at(text, end, n))) end += n;
      pos = std::max(pos, end);
    }
    if (begin > done) spans.push_back({-1, done, begin});
    spans.push_back({t.id, begin, end});
    done = end;
  }
  if (done < text.size()) spans.push_back({-1, done, text.size()});
  return spans;
}

}  // namespace slimkv
