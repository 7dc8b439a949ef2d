// One parse step over a grammar: expands stacks until each top is a byte class (or the stack is empty) and moves
// a set of stacks over one byte. Stacks live in a StackArena owned by the caller.
// Owns: StackSet, ParseStepper. Must not know: tokens, vocabularies, masks.
#pragma once
#include <cstdint>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/stack_arena.h"

namespace slimkv::grammar {

// Live parses after some text: stacks whose top is a byte-class element, and whether some parse is complete.
struct StackSet {
  std::vector<int32_t> tops;  // arena handles, distinct
  bool complete = false;
  void clear() {
    tops.clear();
    complete = false;
  }
  bool dead() const { return tops.empty() && !complete; }
};

class ParseStepper {
 public:
  ParseStepper(const Grammar& grammar, StackArena& arena) : g_(grammar), arena_(arena) {}
  void start(StackSet& out);  // the root rule's alternatives, expanded
  // `out` = the parses of `in` after `byte` (cleared first). A GrammarError past kMaxStacks parses.
  void step(const StackSet& in, uint8_t byte, StackSet& out);
  ByteClass next_bytes(const StackSet& in) const;  // every byte some parse accepts next
  // Whether the top of stack `h` (a byte-class element) accepts `byte`. step() depends only on which tops do.
  bool top_accepts(int32_t h, uint8_t byte) const { return top_class(h).test(byte); }
  const ByteClass& top_class(int32_t h) const { return g_.classes[g_.elements[arena_.node(h).pos].value]; }
  // The positions of stack `h` from the bottom up; and back (interned) from such a list.
  std::vector<uint32_t> materialize(int32_t h) const;
  int32_t import(const std::vector<uint32_t>& positions);

 private:
  void push_pos(uint32_t pos, int32_t parent, StackSet& out);
  void expand(int32_t h, StackSet& out);
  void add_top(int32_t h, StackSet& out);
  const Grammar& g_;
  StackArena& arena_;
  uint32_t stamp_ = 0;
};

}  // namespace slimkv::grammar
