#include "tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <array>
#include <queue>

#include "core/check.h"

namespace slimkv {
namespace {

struct ByteMaps {
  std::array<std::string, 256> to_unicode;
  std::array<int16_t, 512> to_byte;  // code point -> byte, or -1 (all mapped code points are below 0x144)
};

std::string utf8_of(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else {  // the mapping only needs code points below 0x800
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

const ByteMaps& byte_maps() {
  static const ByteMaps maps = [] {
    ByteMaps m;
    m.to_byte.fill(-1);
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      uint32_t cp = printable ? b : 256 + n++;
      m.to_unicode[b] = utf8_of(cp);
      m.to_byte[cp] = static_cast<int16_t>(b);
    }
    return m;
  }();
  return maps;
}

int parse_byte_piece(std::string_view p) {  // "<0xNN>" -> NN, else -1
  if (p.size() != 6 || p.substr(0, 3) != "<0x" || p[5] != '>') return -1;
  auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
  };
  int hi = hex(p[3]), lo = hex(p[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

uint64_t pair_key(int32_t l, int32_t r) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
}

struct Sym {
  int32_t id;  // interned symbol, or -1 for a character without one
  int32_t prev, next;
  uint32_t begin, len;  // byte range in the word
};
struct Cand {
  int32_t rank, left, right, left_id, right_id, result;
  bool operator>(const Cand& o) const { return rank > o.rank || (rank == o.rank && left > o.left); }
};

}  // namespace

const std::string& byte_to_unicode(uint8_t byte) { return byte_maps().to_unicode[byte]; }

struct BpeTokenizer::Scratch {
  std::string frag, word;
  std::vector<std::string_view> words;
  std::vector<Sym> syms;
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> queue;
};

BpeTokenizer::BpeTokenizer(BpeConfig config)
    : cfg_(std::move(config)), pre_(cfg_.pretokenizer), normalizer_(cfg_.normalizer) {
  const int64_t n = static_cast<int64_t>(cfg_.pieces.size());
  SLIMKV_CHECK(n > 0, "tokenizer: empty vocabulary");
  SLIMKV_CHECK(n < (int64_t{1} << 30), "tokenizer: vocabulary of {} pieces is absurd", n);
  SLIMKV_CHECK(cfg_.types.empty() || static_cast<int64_t>(cfg_.types.size()) == n,
               "tokenizer: {} pieces but {} token types", n, cfg_.types.size());
  auto check_id = [&](int32_t id, const char* what, bool optional) {
    SLIMKV_CHECK((optional && id == -1) || (id >= 0 && id < n), "tokenizer: {} id {} is outside the vocabulary of {}",
                 what, id, n);
  };
  check_id(cfg_.unk_id, "unknown-token", true);
  check_id(cfg_.bos_id, "BOS", true);
  check_id(cfg_.eos_id, "EOS", true);
  for (int32_t id : cfg_.prefix_ids) check_id(id, "prefix", false);
  for (int32_t id : cfg_.suffix_ids) check_id(id, "suffix", false);
  bos_id_ = cfg_.bos_id;
  eos_id_ = cfg_.eos_id;

  symbols_.reserve(cfg_.pieces.size() + cfg_.merges.size());
  for (int32_t i = 0; i < n; ++i) symbols_.emplace(cfg_.pieces[i], i);  // first occurrence wins
  n_symbols_ = static_cast<int32_t>(n);
  merges_.reserve(cfg_.merges.size());
  for (size_t r = 0; r < cfg_.merges.size(); ++r) {
    const auto& [a, b] = cfg_.merges[r];
    SLIMKV_CHECK(!a.empty() && !b.empty(), "tokenizer: merge {} has an empty side", r);
    int32_t l = intern(a), rt = intern(b), res = intern(a + b);
    merges_.emplace(pair_key(l, rt), Merge{static_cast<int32_t>(r), res});  // first rank wins
  }
  std::fill(std::begin(byte_piece_), std::end(byte_piece_), -1);
  std::fill(std::begin(raw_byte_id_), std::end(raw_byte_id_), -1);
  for (int32_t i = 0; i < n; ++i) {
    int b = parse_byte_piece(cfg_.pieces[i]);
    if (b >= 0 && byte_piece_[b] < 0) byte_piece_[b] = i;
  }
  std::vector<AddedToken> added = cfg_.added;
  if (added.empty()) {  // no added-token records (GGUF): user-defined tokens, and control / unknown ones as special
    for (int32_t i = 0; i < n; ++i) {
      const int32_t t = type_of(i);
      if (t == kTokUserDefined || t == kTokControl || t == kTokUnknown) {
        added.push_back({i, cfg_.pieces[i], t != kTokUserDefined});
      }
    }
  }
  std::vector<AddedToken> raw, normalized;
  for (AddedToken& t : added) {
    check_id(t.id, "added-token", false);
    (t.normalized ? normalized : raw).push_back(std::move(t));
  }
  raw_added_ = AddedTokenMatcher(std::move(raw));
  normalized_added_ = AddedTokenMatcher(std::move(normalized));
  for (int b = 0; b < 256; ++b) {
    int32_t id = symbol(std::string(1, static_cast<char>(b)));
    if (id >= 0 && id < n) raw_byte_id_[b] = id;
  }
}

int32_t BpeTokenizer::symbol(std::string_view s) const {
  auto it = symbols_.find(s);
  return it == symbols_.end() ? -1 : it->second;
}

int32_t BpeTokenizer::intern(const std::string& s) {
  auto [it, added] = symbols_.emplace(s, n_symbols_);
  if (added) {
    SLIMKV_CHECK(n_symbols_ < INT32_MAX - 1, "tokenizer: too many merge symbols");
    ++n_symbols_;
  }
  return it->second;
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view raw, bool add_special) const {
  return encode(raw, EncodeOptions{add_special, false});
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view raw, const EncodeOptions& opts) const {
  std::vector<int32_t> out;
  if (opts.add_special) out = cfg_.prefix_ids;
  const std::string text = sanitize_utf8(raw);
  Scratch sc;
  for (const TextSpan& span : raw_added_.split(text, opts.parse_special)) {
    if (span.token >= 0) {
      out.push_back(span.token);
      continue;
    }
    const std::string_view piece = std::string_view(text).substr(span.begin, span.end - span.begin);
    std::string normalized;  // only a normalizer copies the text
    if (!normalizer_.empty()) normalized = normalizer_.apply(piece);
    const std::string_view norm = normalizer_.empty() ? piece : std::string_view(normalized);
    for (const TextSpan& sub : normalized_added_.split(norm, opts.parse_special)) {
      if (sub.token >= 0) out.push_back(sub.token);
      else encode_fragment(norm.substr(sub.begin, sub.end - sub.begin),
                           span.begin == 0 && sub.begin == 0, out, sc);
    }
  }
  if (opts.add_special) out.insert(out.end(), cfg_.suffix_ids.begin(), cfg_.suffix_ids.end());
  return out;
}

void BpeTokenizer::encode_fragment(std::string_view text, bool at_start, std::vector<int32_t>& out,
                                   Scratch& sc) const {
  if (text.empty()) return;
  std::string& s = sc.frag;
  s.clear();
  if (cfg_.add_prefix_space && text[0] != ' ') s += ' ';
  if (cfg_.metaspace.empty()) {
    s += text;
  } else {
    for (char c : text) {
      if (c == ' ') s += cfg_.metaspace;
      else s += c;
    }
    using P = BpeConfig::Prepend;
    const bool prepend = cfg_.metaspace_prepend == P::kAlways || (cfg_.metaspace_prepend == P::kFirst && at_start);
    if (prepend && s.compare(0, cfg_.metaspace.size(), cfg_.metaspace) != 0) s.insert(0, cfg_.metaspace);
  }
  sc.words.clear();
  pre_.split(s, sc.words);
  for (std::string_view w : sc.words) {
    if (!cfg_.byte_level) {
      encode_word(w, out, sc);
      continue;
    }
    sc.word.clear();
    for (char c : w) sc.word += byte_to_unicode(static_cast<uint8_t>(c));
    encode_word(sc.word, out, sc);
  }
}

void BpeTokenizer::encode_word(std::string_view word, std::vector<int32_t>& out, Scratch& sc) const {
  if (word.empty()) return;
  if (cfg_.word_model) return cfg_.word_model->encode_word(word, out);
  if (cfg_.ignore_merges) {
    int32_t id = symbol(word);
    if (id >= 0 && id < vocab_size()) {
      out.push_back(id);
      return;
    }
  }
  auto& syms = sc.syms;
  syms.clear();
  bool prev_unk = false;
  for (size_t i = 0; i < word.size();) {
    size_t n = std::min(utf8_sequence_length(static_cast<unsigned char>(word[i])), word.size() - i);
    std::string_view ch = word.substr(i, n);
    int32_t id = symbol(ch);
    auto has_byte_piece = [&](char c) { return byte_piece_[static_cast<uint8_t>(c)] >= 0; };
    bool bytes_ok = id < 0 && cfg_.byte_fallback && std::all_of(ch.begin(), ch.end(), has_byte_piece);
    if (id >= 0) {
      syms.push_back({id, 0, 0, static_cast<uint32_t>(i), static_cast<uint32_t>(n)});
      prev_unk = false;
    } else if (bytes_ok) {
      for (size_t k = 0; k < n; ++k) {
        syms.push_back({byte_piece_[static_cast<uint8_t>(ch[k])], 0, 0, static_cast<uint32_t>(i + k), 1});
      }
      prev_unk = false;
    } else if (cfg_.unk_id >= 0 && cfg_.fuse_unk && prev_unk) {
      syms.back().len += static_cast<uint32_t>(n);
    } else {
      syms.push_back({cfg_.unk_id, 0, 0, static_cast<uint32_t>(i), static_cast<uint32_t>(n)});
      prev_unk = cfg_.unk_id >= 0;
    }
    i += n;
  }
  const int32_t count = static_cast<int32_t>(syms.size());
  for (int32_t i = 0; i < count; ++i) {
    syms[i].prev = i - 1;
    syms[i].next = i + 1 < count ? i + 1 : -1;
  }
  auto& queue = sc.queue;
  auto try_add = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0 || syms[l].id < 0 || syms[r].id < 0) return;
    auto it = merges_.find(pair_key(syms[l].id, syms[r].id));
    if (it != merges_.end()) queue.push({it->second.rank, l, r, syms[l].id, syms[r].id, it->second.result});
  };
  for (int32_t i = 0; i + 1 < count; ++i) try_add(i, i + 1);
  while (!queue.empty()) {
    Cand c = queue.top();
    queue.pop();
    Sym& l = syms[c.left];
    Sym& r = syms[c.right];
    if (l.len == 0 || r.len == 0 || l.next != c.right || l.id != c.left_id || r.id != c.right_id) continue;  // stale
    l.id = c.result;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = c.left;
    try_add(l.prev, c.left);
    try_add(c.left, l.next);
  }
  for (int32_t i = 0; i >= 0 && i < count; i = syms[i].next) {
    const Sym& s = syms[i];
    if (s.id >= 0 && s.id < vocab_size()) {
      out.push_back(s.id);
      continue;
    }
    for (char c : word.substr(s.begin, s.len)) {  // no piece: one-byte pieces where they exist (llama.cpp)
      int32_t b = raw_byte_id_[static_cast<uint8_t>(c)];
      if (b >= 0) out.push_back(b);
    }
  }
}

std::string BpeTokenizer::decode_token(int32_t prev_id, int32_t id) const {
  if (id < 0 || id >= vocab_size()) return "";
  const int32_t type = type_of(id);
  if (type == kTokControl || type == kTokUnknown || type == kTokUnused) return "";
  const std::string& p = cfg_.pieces[id];
  if (type == kTokUserDefined) return p;
  int byte = type == kTokByte || cfg_.decode_byte_fallback ? parse_byte_piece(p) : -1;
  std::string s;
  if (byte >= 0) {
    s.assign(1, static_cast<char>(byte));
  } else {
    const std::string& m = cfg_.decode_space_marker;
    std::string t;
    for (size_t i = 0; i < p.size();) {
      if (!m.empty() && p.compare(i, m.size(), m) == 0) {
        t += ' ';
        i += m.size();
      } else {
        t += p[i++];
      }
    }
    if (!cfg_.decode_byte_level) {
      s = std::move(t);
    } else {
      const auto& to_byte = byte_maps().to_byte;
      for (size_t i = 0; i < t.size();) {
        size_t n = std::min(utf8_sequence_length(static_cast<unsigned char>(t[i])), t.size() - i);
        uint32_t cp = n == 1 ? static_cast<unsigned char>(t[i])
                      : n == 2 ? ((t[i] & 0x1F) << 6) | (t[i + 1] & 0x3F) : 0xFFFF;
        if (cp < to_byte.size() && to_byte[cp] >= 0) s += static_cast<char>(to_byte[cp]);
        else s.append(t, i, n);  // not a byte-level character: keep as is
        i += n;
      }
    }
  }
  if (!cfg_.decode_subword_prefix.empty()) {
    const std::string& pre = cfg_.decode_subword_prefix;
    const bool first = prev_id < 0 || prev_id == bos_id_;  // a skipped special token elsewhere: not first
    if (!first && s.compare(0, pre.size(), pre) == 0) s.erase(0, pre.size());
    else if (!first) s.insert(0, " ");
    if (cfg_.decode_cleanup) s = wordpiece_cleanup(std::move(s));
  }
  if (cfg_.strip_leading_space && (prev_id < 0 || prev_id == bos_id_) && !s.empty() && s[0] == ' ') s.erase(0, 1);
  return s;
}

}  // namespace slimkv

namespace slimkv {

std::string BpeTokenizer::decode(const std::vector<int32_t>& ids, const DecodeOptions& opts) const {
  if (cfg_.decoders.empty() && opts.skip_special) return decode(ids);
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) continue;
    const int32_t type = type_of(id);
    if (type == kTokUnused || ((type == kTokControl || type == kTokUnknown) && opts.skip_special)) continue;
    tokens.push_back(cfg_.decoders.empty() && type != kTokControl ? decode_token(-1, id) : cfg_.pieces[id]);
  }
  std::string text = cfg_.decoders.empty() ? [&] {
    std::string all;
    for (const std::string& t : tokens) all += t;
    return all;
  }() : run_decoders(cfg_.decoders, std::move(tokens));
  return cfg_.clean_up_spaces ? clean_up_tokenization(std::move(text)) : text;
}

}  // namespace slimkv
