// Memoized parse steps: interns each distinct StackSet (sorted tops + complete) to an id and caches, per id, the
// set after each byte, the bytes it accepts, and its "safe classes": K_d = bytes such that every string of at most
// d of them is accepted (inside a string of maxLength >= d, every plain character). A mask walk is then one table
// lookup per trie node, and a whole subtree whose bytes are all in K_height is allowed without walking it.
// A step depends only on which tops accept the byte: steps are computed once per such signature, not per byte.
// Owns: StackSetTable. Must not know: tokens, vocabularies, masks.
#pragma once
#include <cstdint>
#include <array>
#include <unordered_map>
#include <vector>

#include "grammar/parse_stepper.h"

namespace slimkv::grammar {

class StackSetTable {
 public:
  static constexpr uint32_t kDead = UINT32_MAX;  // no parse survives
  static constexpr size_t kMaxSets = 1u << 20;    // more: a GrammarError (the walk would not be bounded)

  explicit StackSetTable(ParseStepper& stepper) : stepper_(stepper) {}
  uint32_t intern(StackSet set);  // sorts `set.tops`
  const StackSet& set(uint32_t id) const { return sets_[id]; }
  uint32_t step(uint32_t id, uint8_t byte) {
    if (row_[id] != kNoRow) {  // a hot set: a dense row of 256
      uint32_t& t = rows_[size_t{row_[id]} * 256 + byte];
      if (t != kUnknown) return t;
    }
    const uint64_t key = (uint64_t{id} << 8) | byte;
    size_t slot = slot_of(key);
    if (keys_[slot] != key) {
      const uint32_t next = compute_step(id, byte);  // may grow every table
      slot = slot_of(key);
      keys_[slot] = key;
      values_[slot] = next;
      if (++transition_count_ * 2 > keys_.size()) grow();
      slot = slot_of(key);
      if (++steps_[id] == kHotSteps && rows_.size() < kMaxRows * 256) {
        row_[id] = static_cast<uint32_t>(rows_.size() / 256);
        rows_.resize(rows_.size() + 256, kUnknown);
      }
    }
    if (row_[id] != kNoRow) rows_[size_t{row_[id]} * 256 + byte] = values_[slot];
    return values_[slot];
  }
  size_t transition_count() const { return transition_count_; }
  const ByteClass& next_bytes(uint32_t id) const { return next_[id]; }
  static constexpr uint32_t kMaxSafeDepth = 16;
  // K_depth(id), 1 <= depth <= kMaxSafeDepth: U(id) ∩ K_{depth-1}(successor), where U(id) are the bytes leading
  // to id's most common successor set (conservative: a subset of what is safe).
  ByteClass safe_class(uint32_t id, uint32_t depth);
  size_t size() const { return sets_.size(); }
  void clear();
  // Every byte of [lo, hi] is accepted by the same tops of set `id` (so all step to one set).
  bool uniform(uint32_t id, uint8_t lo, uint8_t hi) const;

 private:
  static constexpr uint64_t kNoKey = UINT64_MAX;
  static constexpr uint32_t kUnknown = UINT32_MAX - 1, kNoRow = UINT32_MAX;
  static constexpr uint32_t kHotSteps = 16;   // a set stepped over this many bytes gets a dense row
  static constexpr size_t kMaxRows = 2'048;   // 2 MB of rows at most
  struct KeyHash {
    size_t operator()(const std::vector<int32_t>& k) const;
  };
  uint32_t compute_step(uint32_t id, uint8_t byte);
  size_t slot_of(uint64_t key) const {  // the key's slot, or the free slot where it would go
    const size_t mask = keys_.size() - 1;
    size_t slot = static_cast<size_t>((key * 0x9E3779B97F4A7C15ULL) >> 20) & mask;
    while (keys_[slot] != key && keys_[slot] != kNoKey) slot = (slot + 1) & mask;
    return slot;
  }
  void grow();
  ParseStepper& stepper_;
  std::vector<StackSet> sets_;
  std::vector<ByteClass> next_;
  struct Safe {
    uint32_t filled = 0;  // K_1..K_filled computed
    uint32_t successor = kDead;
    std::array<ByteClass, kMaxSafeDepth + 1> k;  // k[0] = U(id)
  };
  void fill_safe(uint32_t id, uint32_t depth);
  // per set: (signature = which of its first 64 tops accept a byte, successor) pairs seen so far
  std::vector<std::vector<std::pair<uint64_t, uint32_t>>> by_signature_;
  std::vector<Safe> safe_;
  // Memoized transitions (set id, byte) -> set id or kDead: open addressing, linear probing.
  std::vector<uint64_t> keys_ = std::vector<uint64_t>(4096, kNoKey);
  std::vector<uint32_t> values_ = std::vector<uint32_t>(4096, 0);
  size_t transition_count_ = 0;
  std::vector<uint32_t> row_, steps_;  // per set: its dense row (or kNoRow), how many bytes it was stepped over
  std::vector<uint32_t> rows_;         // [row][byte]: set id, kDead or kUnknown
  std::unordered_map<std::vector<int32_t>, uint32_t, KeyHash> ids_;
  StackSet scratch_;
};

}  // namespace slimkv::grammar
