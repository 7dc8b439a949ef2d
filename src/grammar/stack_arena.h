// Parse stacks as interned, persistent linked nodes: a stack is the handle of its top node, equal stacks share one
// handle (so sets dedup by handle and expansion cycles stop); nodes are forgotten LIFO (rollback) or all at once.
// Owns: StackArena. Must not know: tokens, what the grammar positions mean.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace slimkv::grammar {

inline constexpr int32_t kEmptyStack = -1;  // nothing left to match: the text so far is complete
inline constexpr int32_t kTooDeep = -2;     // a push past kMaxStackDepth: that parse is pruned
inline constexpr size_t kMaxArenaNodes = 32u << 20;

class StackArena {
 public:
  struct Node {
    uint32_t pos;     // the grammar element to match next (top) or to resume at (below)
    int32_t parent;   // the stack below, or kEmptyStack
    uint32_t depth;   // 1 + the parent's depth
    uint32_t mark;    // step stamp: expanded in that step already
    uint32_t slot;    // where it sits in the hash table (for rollback)
  };

  StackArena();
  // The handle of (pos, parent), creating it when new; kTooDeep past kMaxStackDepth; a GrammarError past
  // kMaxArenaNodes.
  int32_t intern(uint32_t pos, int32_t parent);
  Node& node(int32_t h) { return nodes_[static_cast<size_t>(h)]; }
  const Node& node(int32_t h) const { return nodes_[static_cast<size_t>(h)]; }
  size_t size() const { return nodes_.size(); }
  void rollback(size_t size);  // forget every node created after size() was `size`
  void clear();
  uint32_t new_stamp();

 private:
  static uint64_t hash(uint32_t pos, int32_t parent);
  void grow();
  std::vector<Node> nodes_;
  std::vector<int32_t> table_;  // open addressing, linear probing; -1 = free
  uint32_t stamp_ = 0;
};

}  // namespace slimkv::grammar
