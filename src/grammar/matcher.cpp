#include "grammar/matcher.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "core/check.h"

namespace slimkv::grammar {
namespace {

constexpr size_t kResetArenaNodes = 1u << 20;  // scratch kept across calls up to this size
constexpr size_t kResetSets = 4'096;
constexpr size_t kResetTransitions = 1u << 18;
constexpr uint32_t kSafeSubtreeTokens = 2;      // subtrees this large try the safe-class shortcut
constexpr size_t kRememberVisited = 4'096;     // walks this long are cached
constexpr int kPlainLookahead = 16;             // plain depths looked at this far (longer subtrees are walked)
constexpr size_t kCachedMasks = 8;              // per matcher: 8 x vocab / 8 bytes (150 KB for 150K tokens)

bool subset(const ByteClass& a, const ByteClass& b) {
  for (int i = 0; i < 4; ++i)
    if (a.bits[i] & ~b.bits[i]) return false;
  return true;
}

// Each byte of a 64-bit word spread to 8 bytes of 0/1 (little-endian: bit k -> byte k).
const std::array<uint64_t, 256>& spread_table() {
  static const std::array<uint64_t, 256> t = [] {
    std::array<uint64_t, 256> out{};
    for (int v = 0; v < 256; ++v)
      for (int k = 0; k < 8; ++k)
        if (v >> k & 1) out[static_cast<size_t>(v)] |= uint64_t{1} << (8 * k);
    return out;
  }();
  return t;
}

// allowed[i] = bit i of `bits`, eight bytes at a time.
void expand_bits(const std::vector<uint64_t>& bits, std::vector<uint8_t>& allowed) {
  const auto& spread = spread_table();
  const size_t n = allowed.size();
  for (size_t w = 0; w < bits.size(); ++w) {
    const uint64_t word = bits[w];
    if (!word) continue;
    for (size_t k = 0; k < 8; ++k) {
      const size_t at = w * 64 + k * 8;
      if (at >= n) break;
      const uint64_t bytes = spread[(word >> (8 * k)) & 0xFF];
      if (at + 8 <= n) std::memcpy(&allowed[at], &bytes, 8);
      else
        for (size_t j = 0; at + j < n; ++j) allowed[at + j] = static_cast<uint8_t>((bytes >> (8 * j)) & 1);
    }
  }
}

}  // namespace

Matcher::Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabulary> vocab)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)), stepper_(*grammar_, arena_), table_(stepper_),
      ascii_depth_(table_, PlainAlphabet::kAscii), utf8_depth_(table_, PlainAlphabet::kUtf8) {
  SLIMKV_CHECK(grammar_ && vocab_, "Matcher needs a grammar and a vocabulary");
  StackSet start;
  stepper_.start(start);
  state_.complete = start.complete;
  for (int32_t h : start.tops) state_.stacks.push_back(stepper_.materialize(h));
}

uint32_t Matcher::current() const {
  if (arena_.size() > kResetArenaNodes || table_.size() > kResetSets ||
      table_.transition_count() > kResetTransitions) {
    table_.clear();
    ascii_depth_.clear();
    utf8_depth_.clear();
    arena_.clear();
    cache_.clear();
    current_ = StackSetTable::kDead;
  }
  if (current_ == StackSetTable::kDead) {
    StackSet set;
    set.complete = state_.complete;
    for (const auto& s : state_.stacks) set.tops.push_back(stepper_.import(s));
    current_ = table_.intern(std::move(set));
  }
  return current_;
}

uint32_t Matcher::walk_bytes(const std::string& bytes) const {
  uint32_t id = current();
  for (char ch : bytes) {
    id = table_.step(id, static_cast<uint8_t>(ch));
    if (id == StackSetTable::kDead) break;
  }
  return id;
}

bool Matcher::accepts(int32_t token) const {
  if (ended_ || token < 0 || static_cast<size_t>(token) >= vocab_->size()) return false;
  if (vocab_->is_eos(token)) return state_.complete;
  const std::string& bytes = vocab_->bytes(token);
  return !bytes.empty() && walk_bytes(bytes) != StackSetTable::kDead;
}

bool Matcher::advance(int32_t token) {
  if (!accepts(token)) return false;
  if (vocab_->is_eos(token)) {
    ended_ = true;
    return true;
  }
  const uint32_t id = walk_bytes(vocab_->bytes(token));
  const StackSet& set = table_.set(id);
  state_.complete = set.complete;
  state_.stacks.clear();
  for (int32_t h : set.tops) state_.stacks.push_back(stepper_.materialize(h));
  current_ = id;
  return true;
}

bool Matcher::is_complete() const { return state_.complete; }

bool Matcher::is_exhausted() const { return ended_ || (state_.complete && state_.stacks.empty()); }

void Matcher::fill_mask(std::vector<uint8_t>& allowed) const {
  allowed.assign(vocab_->size(), 0);
  if (ended_) return;
  const uint32_t set = current();
  ++clock_;
  for (CachedMask& c : cache_) {
    if (c.set != set) continue;
    c.last_use = clock_;
    expand_bits(c.bits, allowed);
    return;
  }
  if (state_.complete)
    for (int32_t id : vocab_->eos_ids()) allowed[static_cast<size_t>(id)] = 1;
  visited_ = 0;
  walk_trie(TokenVocabulary::kRoot, set, 0, allowed);
  if (visited_ >= kRememberVisited) remember(set, allowed);
}

void Matcher::remember(uint32_t set, const std::vector<uint8_t>& allowed) const {
  CachedMask* slot = nullptr;
  if (cache_.size() < kCachedMasks) {
    slot = &cache_.emplace_back();
  } else {
    slot = &cache_[0];
    for (CachedMask& c : cache_)
      if (c.last_use < slot->last_use) slot = &c;
  }
  slot->set = set;
  slot->last_use = clock_;
  slot->bits.assign((allowed.size() + 63) / 64, 0);
  for (size_t i = 0; i < allowed.size(); ++i) slot->bits[i / 64] |= uint64_t{allowed[i] != 0} << (i % 64);
}

// The tokens of `node`'s subtree with at most max_chars characters (counted from the root; UINT32_MAX: all).
void Matcher::allow_subtree(const TokenVocabulary::TrieNode& node, uint32_t max_chars,
                            std::vector<uint8_t>& allowed) const {
  const auto& order = vocab_->token_order();
  visited_ += 1 + (node.subtree_end - node.first_token) / 16;
  for (uint32_t t = node.first_token; t < node.subtree_end; ++t)
    if (vocab_->order_chars(t) <= max_chars) allowed[static_cast<size_t>(order[t])] = 1;
}

// For each child byte some parse of `set` accepts: allow the child's whole subtree at once when its tokens are plain
// text of no more characters than `set` accepts (inside a string with room for them), or step (memoized), allow the
// tokens ending there, then either allow the subtree at once (every string of its bytes and height is safe from
// the child's set) or walk it.
void Matcher::walk_trie(uint32_t node, uint32_t set, uint32_t prefix_chars, std::vector<uint8_t>& allowed) const {
  const TokenVocabulary::TrieNode& n = vocab_->node(node);
  const ByteClass next = table_.next_bytes(set);
  const auto& order = vocab_->token_order();
  for (uint32_t e = n.first_edge; e < n.first_edge + n.edge_count; ++e) {
    const TokenVocabulary::Edge& edge = vocab_->edge(e);
    if (!next.test(edge.byte)) continue;
    const TokenVocabulary::TrieNode& below = vocab_->node(edge.child);
    if (below.plain_chars > 0) {  // plain tokens below: the ASCII depth when they are ASCII (cheaper to follow)
      const bool ascii = below.ascii_chars > 0;
      const int chars = ascii ? below.ascii_chars : below.plain_chars;
      const PlainDepth plain = (ascii ? ascii_depth_ : utf8_depth_).depth(set, std::min(chars, kPlainLookahead));
      if (chars <= plain.chars) {  // every token below is plain text this set accepts
        allow_subtree(below, UINT32_MAX, allowed);
        continue;
      }
      if (plain.exact && plain.chars > 0) {  // ... and accepts exactly those of at most plain.chars characters
        allow_subtree(below, prefix_chars + static_cast<uint32_t>(plain.chars), allowed);
        continue;
      }
    }
    const uint32_t child_set = table_.step(set, edge.byte);
    if (child_set == StackSetTable::kDead) continue;
    ++visited_;
    if (below.height > 0 && below.height <= StackSetTable::kMaxSafeDepth &&
        below.subtree_end - below.first_token >= kSafeSubtreeTokens &&
        subset(vocab_->below_class(below.below_class), table_.safe_class(child_set, below.height))) {
      allow_subtree(below, UINT32_MAX, allowed);
      continue;
    }
    for (uint32_t t = below.first_token; t < below.first_token + below.token_count; ++t)
      allowed[static_cast<size_t>(order[t])] = 1;
    if (below.edge_count)
      walk_trie(edge.child, child_set, prefix_chars + ((edge.byte & 0xC0) != 0x80), allowed);
  }
}

}  // namespace slimkv::grammar
