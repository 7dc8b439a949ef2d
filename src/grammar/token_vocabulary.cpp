#include "grammar/token_vocabulary.h"

#include <algorithm>

#include "core/check.h"
#include "grammar/plain_text.h"

namespace slimkv::grammar {

TokenVocabulary::TokenVocabulary(std::vector<std::string> token_bytes, std::vector<int32_t> eos_ids)
    : bytes_(std::move(token_bytes)), eos_ids_(std::move(eos_ids)), is_eos_(bytes_.size(), 0) {
  SLIMKV_CHECK(bytes_.size() < (size_t{1} << 31), "vocabulary too large ({} tokens)", bytes_.size());
  for (int32_t id : eos_ids_) {
    SLIMKV_CHECK(id >= 0 && static_cast<size_t>(id) < bytes_.size(), "EOS id {} outside the vocabulary of {}", id,
                 bytes_.size());
    is_eos_[static_cast<size_t>(id)] = 1;
  }
  for (size_t id = 0; id < bytes_.size(); ++id)
    if (!is_eos_[id] && !bytes_[id].empty()) order_.push_back(static_cast<int32_t>(id));
  std::sort(order_.begin(), order_.end(), [&](int32_t a, int32_t b) {
    const std::string& x = bytes_[static_cast<size_t>(a)];
    const std::string& y = bytes_[static_cast<size_t>(b)];
    return x != y ? x < y : a < b;
  });
  for (int32_t id : order_) {
    uint32_t chars = 0;
    for (char c : bytes_[static_cast<size_t>(id)]) chars += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
    order_chars_.push_back(chars);
  }
  build(0, order_.size(), 0);
  class_ids_.clear();
}

uint32_t TokenVocabulary::class_index(const ByteClass& c) {
  auto key = std::string(reinterpret_cast<const char*>(c.bits.data()), sizeof(c.bits));
  auto [it, inserted] = class_ids_.emplace(std::move(key), static_cast<uint32_t>(below_classes_.size()));
  if (inserted) below_classes_.push_back(c);
  return it->second;
}

// The most characters of order_[lo, hi) from byte depth - 1 on when all are plain text of the alphabet, or -1.
int TokenVocabulary::subtree_plain_chars(size_t lo, size_t hi, size_t depth, PlainAlphabet alphabet) const {
  int plain = 0;
  for (size_t t = lo; t < hi && plain >= 0; ++t) {
    const int c = plain_char_count(std::string_view(bytes_[static_cast<size_t>(order_[t])]).substr(depth - 1), alphabet);
    plain = c < 0 ? -1 : std::max(plain, c);
  }
  return plain;
}

// The node for order_[lo, hi), which all share their first `depth` bytes: tokens of exactly that length sort
// first and end here; the rest group by their next byte into children. Returns the node's index.
uint32_t TokenVocabulary::build(size_t lo, size_t hi, size_t depth) {
  const uint32_t self = static_cast<uint32_t>(nodes_.size());
  nodes_.emplace_back();
  size_t i = lo;
  while (i < hi && bytes_[static_cast<size_t>(order_[i])].size() == depth) ++i;
  nodes_[self].first_token = static_cast<uint32_t>(lo);
  nodes_[self].token_count = static_cast<uint32_t>(i - lo);
  std::vector<Edge> edges;
  while (i < hi) {
    const uint8_t b = static_cast<uint8_t>(bytes_[static_cast<size_t>(order_[i])][depth]);
    size_t j = i;
    while (j < hi && static_cast<uint8_t>(bytes_[static_cast<size_t>(order_[j])][depth]) == b) ++j;
    edges.push_back({b, build(i, j, depth + 1)});
    i = j;
  }
  ByteClass below;
  uint32_t height = 0;
  for (const Edge& e : edges) {
    below.set(e.byte);
    height = std::max(height, nodes_[e.child].height + 1);
    below |= below_classes_[nodes_[e.child].below_class];
  }
  nodes_[self].below_class = class_index(below);
  nodes_[self].subtree_end = static_cast<uint32_t>(hi);
  nodes_[self].height = height;
  if (depth > 0) {
    nodes_[self].plain_chars = subtree_plain_chars(lo, hi, depth, PlainAlphabet::kUtf8);
    nodes_[self].ascii_chars = subtree_plain_chars(lo, hi, depth, PlainAlphabet::kAscii);
  }
  nodes_[self].first_edge = static_cast<uint32_t>(edges_.size());
  nodes_[self].edge_count = static_cast<uint32_t>(edges.size());
  edges_.insert(edges_.end(), edges.begin(), edges.end());
  return self;
}

}  // namespace slimkv::grammar
