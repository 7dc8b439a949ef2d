#include "tokenizer/token_decoder.h"

#include "tokenizer/bpe_tokenizer.h"

namespace slimkv {
namespace {

const char kReplacementChar[] = "\xEF\xBF\xBD";

// Code point -> byte for GPT-2's byte-level characters, or -1.
int byte_of_char(uint32_t cp) {
  static const std::vector<int16_t> table = [] {
    std::vector<int16_t> t(512, -1);
    for (int b = 0; b < 256; ++b) {
      const std::string& s = byte_to_unicode(static_cast<uint8_t>(b));
      uint32_t cp = s.size() == 1 ? static_cast<unsigned char>(s[0])
                                  : ((static_cast<unsigned char>(s[0]) & 0x1F) << 6) | (static_cast<unsigned char>(s[1]) & 0x3F);
      t[cp] = static_cast<int16_t>(b);
    }
    return t;
  }();
  return cp < table.size() ? table[cp] : -1;
}

// The code points of valid UTF-8 `s` (decoder inputs are token strings, which are valid UTF-8).
std::vector<uint32_t> code_points(std::string_view s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 1;
    if (i + n > s.size()) n = 1;
    uint32_t cp = n == 1 ? b : b & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += n;
  }
  return out;
}

std::string byte_level(const std::vector<std::string>& tokens) {
  std::string bytes;
  for (const std::string& t : tokens) {
    std::string mapped;
    bool all = true;
    for (uint32_t cp : code_points(t)) {
      const int b = byte_of_char(cp);
      if (b < 0) {
        all = false;
        break;
      }
      mapped += static_cast<char>(b);
    }
    bytes += all ? mapped : t;  // a token with a character outside the mapping keeps its own bytes
  }
  return utf8_lossy(bytes);
}

int parse_byte_token(const std::string& t) {  // "<0xNN>" -> NN, else -1
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
  };
  const int hi = hex(t[3]), lo = hex(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

std::vector<std::string> byte_fallback(std::vector<std::string> tokens) {
  std::vector<std::string> out;
  std::string pending;
  size_t pending_count = 0;
  auto flush = [&] {
    if (pending_count == 0) return;
    if (utf8_lossy(pending) == pending) {
      out.push_back(pending);
    } else {
      for (size_t i = 0; i < pending_count; ++i) out.emplace_back(kReplacementChar);
    }
    pending.clear();
    pending_count = 0;
  };
  for (std::string& t : tokens) {
    const int b = parse_byte_token(t);
    if (b >= 0) {
      pending += static_cast<char>(b);
      ++pending_count;
      continue;
    }
    flush();
    out.push_back(std::move(t));
  }
  flush();
  return out;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  std::string out;
  size_t pos = 0;
  for (size_t m; (m = s.find(from, pos)) != std::string::npos; pos = m + from.size()) out.append(s, pos, m - pos) += to;
  return out.append(s, pos, std::string::npos);
}

std::string strip_token(const std::string& t, const std::string& ch, int start, int stop) {
  size_t b = 0, e = t.size();
  for (int i = 0; i < start && !ch.empty() && t.compare(b, ch.size(), ch) == 0; ++i) b += ch.size();
  for (int i = 0; i < stop && !ch.empty() && e >= b + ch.size() && t.compare(e - ch.size(), ch.size(), ch) == 0; ++i) {
    e -= ch.size();
  }
  return t.substr(b, e - b);
}

}  // namespace

std::string run_decoders(const std::vector<DecodeStep>& steps, std::vector<std::string> tokens) {
  for (const DecodeStep& st : steps) {
    switch (st.kind) {
      case DecodeStep::kByteLevel: tokens = {byte_level(tokens)}; break;
      case DecodeStep::kByteFallback: tokens = byte_fallback(std::move(tokens)); break;
      case DecodeStep::kFuse: {
        std::string all;
        for (const std::string& t : tokens) all += t;
        tokens = {all};
        break;
      }
      case DecodeStep::kReplace:
        for (std::string& t : tokens) t = replace_all(t, st.pattern, st.content);
        break;
      case DecodeStep::kStrip:
        for (std::string& t : tokens) t = strip_token(t, st.content, st.start, st.stop);
        break;
      case DecodeStep::kMetaspace:
        for (size_t i = 0; i < tokens.size(); ++i) {
          tokens[i] = replace_all(tokens[i], st.pattern, i == 0 && st.prepend ? "" : " ");
        }
        break;
      case DecodeStep::kWordPiece:
        for (size_t i = 0; i < tokens.size(); ++i) {
          std::string& t = tokens[i];
          if (i > 0) t = t.compare(0, st.pattern.size(), st.pattern) == 0
                             ? t.substr(st.pattern.size()) : " " + t;
          if (st.cleanup) t = wordpiece_cleanup(std::move(t));
        }
        break;
    }
  }
  std::string out;
  for (const std::string& t : tokens) out += t;
  return out;
}

std::string wordpiece_cleanup(std::string s) {
  static const std::pair<const char*, const char*> kRules[] = {
      {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
      {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) s = replace_all(s, from, to);
  return s;
}

std::string clean_up_tokenization(std::string s) {
  static const std::pair<const char*, const char*> kRules[] = {
      {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) s = replace_all(s, from, to);
  return s;
}

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  auto at = [&](size_t i) { return i < s.size() ? static_cast<unsigned char>(s[i]) : 0u; };
  for (size_t i = 0; i < s.size();) {
    const unsigned c = at(i);
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    size_t need = 0;
    unsigned lo = 0x80, hi = 0xBF;  // the second byte's range (WHATWG)
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c >= 0xE0 && c <= 0xEF) need = 2, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4) need = 3, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    if (need == 0) {  // not a lead byte
      out += kReplacementChar;
      ++i;
      continue;
    }
    size_t k = 1;
    for (; k <= need; ++k) {
      const unsigned b = at(i + k);
      const bool ok = i + k < s.size() && (k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF));
      if (!ok) break;
    }
    if (k > need) {
      out.append(s.substr(i, need + 1));
      i += need + 1;
    } else {  // a maximal invalid subpart: the lead byte and the continuation bytes that were valid so far
      out += kReplacementChar;
      i += k;
    }
  }
  return out;
}

}  // namespace slimkv
