// One sequence's position in a grammar: the live parse stacks after the text so far, which tokens may come next
// (a mask walked over the vocabulary's byte trie with memoized parse steps, pruning subtrees no parse accepts,
// allowing whole subtrees that are safe or plain text the parses accept, caching expensive masks by parse set),
// and advancing by a token.
// Owns: Matcher. Must not know: tokenizers, models, HTTP, sampling. Not thread-safe: one per sequence.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/parse_stepper.h"
#include "grammar/plain_depth.h"
#include "grammar/stack_arena.h"
#include "grammar/stack_set_table.h"
#include "grammar/token_vocabulary.h"

namespace slimkv::grammar {

class Matcher {
 public:
  Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabulary> vocab);

  bool accepts(int32_t token) const;                    // keeps the text a valid prefix (EOS: iff complete)
  void fill_mask(std::vector<uint8_t>& allowed) const;  // allowed[id] = accepts(id) for every id (size = vocab)
  bool advance(int32_t token);                          // false, state unchanged, when rejected
  bool is_complete() const;                             // the text so far is a full match (EOS may end it)
  bool is_exhausted() const;                            // complete and no byte can follow (must stop)
  bool is_ended() const { return ended_; }              // an EOS was accepted: nothing more is allowed

 private:
  struct State {  // the parses, kept outside the scratch arena
    std::vector<std::vector<uint32_t>> stacks;  // grammar positions, bottom first; top is a byte class
    bool complete = false;
  };
  uint32_t current() const;  // the state's set id in the scratch table (rebuilt after a reset)
  uint32_t walk_bytes(const std::string& bytes) const;  // the set after `bytes`, or kDead
  // prefix_chars: the characters (bytes that start one) on the path to `node`.
  void walk_trie(uint32_t node, uint32_t set, uint32_t prefix_chars, std::vector<uint8_t>& allowed) const;
  void allow_subtree(const TokenVocabulary::TrieNode& node, uint32_t max_chars, std::vector<uint8_t>& allowed) const;
  void remember(uint32_t set, const std::vector<uint8_t>& allowed) const;

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  State state_;
  bool ended_ = false;
  // Scratch kept across calls (hence mutable): interned stacks and memoized steps, reset when they grow large.
  mutable StackArena arena_;
  mutable ParseStepper stepper_;
  mutable StackSetTable table_;
  mutable PlainDepthTable ascii_depth_, utf8_depth_;  // over table_
  mutable uint32_t current_ = StackSetTable::kDead;
  // The last few masks by set id (a state recurs: inside a string, after each token of plain characters).
  struct CachedMask {
    uint32_t set = StackSetTable::kDead;
    uint64_t last_use = 0;
    std::vector<uint64_t> bits;  // [ceil(vocab / 64)]
  };
  mutable std::vector<CachedMask> cache_;
  mutable uint64_t clock_ = 0;
  mutable size_t visited_ = 0;  // work in the last walk: trie nodes stepped into + tokens allowed in bulk / 16
};

}  // namespace slimkv::grammar
