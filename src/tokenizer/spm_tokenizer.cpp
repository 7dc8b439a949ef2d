#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/verbatim_split.h"

#include <algorithm>
#include <queue>

#include "core/check.h"

namespace slimkv {
namespace {

size_t utf8_len(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c >> 5) == 0x6) return 2;
  if ((c >> 4) == 0xE) return 3;
  if ((c >> 3) == 0x1E) return 4;
  return 1;  // invalid lead byte: treat as one byte
}

int parse_byte_piece(const std::string& p) {  // "<0xNN>" -> NN, else -1
  if (p.size() != 6 || p[0] != '<' || p[1] != '0' || p[2] != 'x' || p[5] != '>') return -1;
  auto hex = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
  int hi = hex(p[3]), lo = hex(p[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

struct Symbol {
  int32_t prev, next;
  size_t begin, len;  // byte range in the normalized text
};
struct Bigram {
  int32_t left, right;
  float score;
  size_t len;
  bool operator<(const Bigram& o) const {  // max-heap: higher score first, then leftmost
    return score < o.score || (score == o.score && left > o.left);
  }
};

}  // namespace

SpmTokenizer::SpmTokenizer(SpmVocab vocab) : vocab_(std::move(vocab)) {
  SLIMKV_CHECK(vocab_.pieces.size() == vocab_.scores.size(), "tokenizer: {} pieces but {} scores",
               vocab_.pieces.size(), vocab_.scores.size());
  SLIMKV_CHECK(!vocab_.pieces.empty(), "tokenizer: empty vocabulary");
  bos_id_ = vocab_.bos_id;
  eos_id_ = vocab_.eos_id;
  std::fill(std::begin(byte_ids_), std::end(byte_ids_), -1);
  for (size_t i = 0; i < vocab_.pieces.size(); ++i) {
    const std::string& p = vocab_.pieces[i];
    piece_to_id_.emplace(p, static_cast<int32_t>(i));  // first occurrence wins, as in run.c's sorted lookup
    int b = parse_byte_piece(p);
    if (b >= 0 && byte_ids_[b] < 0) byte_ids_[b] = static_cast<int32_t>(i);
  }
  SLIMKV_CHECK(vocab_.types.empty() || vocab_.types.size() == vocab_.pieces.size(),
               "tokenizer: {} pieces but {} token types", vocab_.pieces.size(), vocab_.types.size());
  for (size_t i = 0; i < vocab_.types.size(); ++i) {
    if (vocab_.types[i] == 4 && !vocab_.pieces[i].empty()) user_defined_.push_back(static_cast<int32_t>(i));
  }
  std::stable_sort(user_defined_.begin(), user_defined_.end(), [&](int32_t a, int32_t b) {
    return vocab_.pieces[a].size() > vocab_.pieces[b].size();
  });
}

int32_t SpmTokenizer::find(std::string_view piece) const {
  auto it = piece_to_id_.find(std::string(piece));
  return it == piece_to_id_.end() ? -1 : it->second;
}

std::vector<int32_t> SpmTokenizer::encode(std::string_view text, bool add_special) const {
  std::vector<int32_t> out;
  if (add_special && vocab_.add_bos && vocab_.bos_id >= 0) out.push_back(vocab_.bos_id);
  if (text.empty()) return out;
  if (user_defined_.empty()) {
    encode_text(text, out);
    return out;
  }
  // llama.cpp: user-defined tokens are cut out of the text first (longest first); every remaining piece of text
  // is encoded on its own, each with the dummy prefix.
  std::vector<TextFragment> frags = split_verbatim(text, user_defined_, vocab_.pieces);
  for (const TextFragment& f : frags) {
    if (f.token >= 0) out.push_back(f.token);
    else encode_text(text.substr(f.begin, f.len), out);
  }
  return out;
}

void SpmTokenizer::encode_text(std::string_view text, std::vector<int32_t>& out) const {
  std::string norm;
  norm.reserve(text.size() + 8);
  if (vocab_.add_dummy_prefix) norm += vocab_.space_marker;
  for (char c : text) {
    if (c == ' ') norm += vocab_.space_marker;
    else norm += c;
  }
  encode_segment(norm, out);
}

void SpmTokenizer::encode_segment(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<Symbol> sym;
  for (size_t i = 0; i < text.size();) {
    size_t n = std::min(utf8_len(static_cast<unsigned char>(text[i])), text.size() - i);
    sym.push_back({static_cast<int32_t>(sym.size()) - 1, static_cast<int32_t>(sym.size()) + 1, i, n});
    i += n;
  }
  if (sym.empty()) return;
  sym.back().next = -1;
  std::priority_queue<Bigram> queue;
  auto try_add = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    std::string_view s = text.substr(sym[l].begin, sym[l].len + sym[r].len);
    int32_t id = find(s);
    if (id >= 0) queue.push({l, r, vocab_.scores[id], s.size()});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(sym.size()); ++i) try_add(i, i + 1);
  while (!queue.empty()) {
    Bigram b = queue.top();
    queue.pop();
    Symbol& l = sym[b.left];
    Symbol& r = sym[b.right];
    if (l.len == 0 || r.len == 0 || l.len + r.len != b.len || l.next != b.right) continue;  // stale
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }
  for (int32_t i = 0; i >= 0; i = sym[i].next) {
    std::string_view s = text.substr(sym[i].begin, sym[i].len);
    int32_t id = find(s);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    for (unsigned char c : s) {  // byte fallback
      out.push_back(byte_ids_[c] >= 0 ? byte_ids_[c] : vocab_.unk_id);
    }
  }
}

std::string SpmTokenizer::decode_token(int32_t prev_id, int32_t id) const {
  if (id < 0 || id >= vocab_size()) return "";
  const std::string& p = vocab_.pieces[id];
  int b = parse_byte_piece(p);
  if (b >= 0) return std::string(1, static_cast<char>(b));
  if (!vocab_.types.empty() && (vocab_.types[id] == 3 || vocab_.types[id] == 2)) return "";  // control, unknown
  if (!vocab_.types.empty() && vocab_.types[id] == 4) return p;  // user-defined: the text as is (llama.cpp)
  std::string s;
  const std::string& m = vocab_.space_marker;
  for (size_t i = 0; i < p.size();) {
    if (p.compare(i, m.size(), m) == 0) {
      s += ' ';
      i += m.size();
    } else {
      s += p[i++];
    }
  }
  if ((prev_id < 0 || prev_id == vocab_.bos_id) && vocab_.add_dummy_prefix && !s.empty() && s[0] == ' ') {
    s.erase(0, 1);
  }
  return s;
}

}  // namespace slimkv
