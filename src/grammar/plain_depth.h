// How much plain text (grammar/plain_text.h) each parse set accepts: the most characters d such that every plain
// text of at most d characters is accepted, and whether every longer one is refused. The mask walk allows a trie
// subtree of plain tokens at once from it (inside a JSON string with room left, every token of plain characters).
// Owns: PlainDepthTable, memoized per set id of one StackSetTable. Must not know: tokens, tries, masks.
#pragma once
#include <cstdint>
#include <vector>

#include "grammar/plain_text.h"
#include "grammar/stack_set_table.h"

namespace slimkv::grammar {

struct PlainDepth {
  int chars = 0;       // every plain text of at most this many characters is accepted (a partial last one too)
  bool exact = false;  // and every longer one is refused
};

class PlainDepthTable {
 public:
  PlainDepthTable(StackSetTable& table, PlainAlphabet alphabet) : table_(table), alphabet_(alphabet) {}
  // Looked at only as far as `want` characters: an answer of `want` or more may be a lower bound (then not exact).
  PlainDepth depth(uint32_t set, int want);
  void clear() { memo_.clear(); }  // with the StackSetTable's clear()

 private:
  struct Memo {
    int chars = -1;  // -1: not known
    bool exact = false;
    bool final = false;  // chars is the depth, not a lower bound
    uint32_t successor = kUnknownSuccessor;  // successor(set), once computed
  };
  static constexpr uint32_t kUnknownSuccessor = StackSetTable::kDead - 1;
  uint32_t successor(uint32_t set);  // the set after any one plain character, or kDead when they differ (memoized)
  uint32_t compute_successor(uint32_t set);
  uint32_t shape_successor(uint32_t set, const PlainCharShape& shape, uint32_t at);
  bool starts_none(uint32_t set) const;  // no plain character's first byte is accepted
  Memo& memo(uint32_t set) {
    if (set >= memo_.size()) memo_.resize(set + 1);
    return memo_[set];
  }
  StackSetTable& table_;
  PlainAlphabet alphabet_;
  std::vector<Memo> memo_;  // by set id
};

}  // namespace slimkv::grammar
