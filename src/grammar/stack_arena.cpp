#include "grammar/stack_arena.h"

#include "grammar/grammar.h"
#include "grammar/grammar_error.h"

namespace slimkv::grammar {

StackArena::StackArena() : table_(1024, -1) {}

uint64_t StackArena::hash(uint32_t pos, int32_t parent) {
  uint64_t k = (uint64_t{pos} << 32) | static_cast<uint32_t>(parent);
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  return k;
}

int32_t StackArena::intern(uint32_t pos, int32_t parent) {
  uint32_t depth = parent < 0 ? 1 : nodes_[static_cast<size_t>(parent)].depth + 1;
  if (depth > kMaxStackDepth) return kTooDeep;
  const size_t mask = table_.size() - 1;
  size_t slot = hash(pos, parent) & mask;
  for (;; slot = (slot + 1) & mask) {
    int32_t h = table_[slot];
    if (h < 0) break;
    const Node& n = nodes_[static_cast<size_t>(h)];
    if (n.pos == pos && n.parent == parent) return h;
  }
  if (nodes_.size() >= kMaxArenaNodes)
    grammar_fail("grammar state too large: more than {} parse stack nodes", kMaxArenaNodes);
  int32_t h = static_cast<int32_t>(nodes_.size());
  nodes_.push_back({pos, parent, depth, 0, static_cast<uint32_t>(slot)});
  table_[slot] = h;
  if (nodes_.size() * 2 > table_.size()) grow();
  return h;
}

void StackArena::grow() {
  std::vector<int32_t> bigger(table_.size() * 2, -1);
  const size_t mask = bigger.size() - 1;
  for (size_t i = 0; i < nodes_.size(); ++i) {  // in creation order, so LIFO rollback stays exact
    size_t slot = hash(nodes_[i].pos, nodes_[i].parent) & mask;
    while (bigger[slot] >= 0) slot = (slot + 1) & mask;
    bigger[slot] = static_cast<int32_t>(i);
    nodes_[i].slot = static_cast<uint32_t>(slot);
  }
  table_.swap(bigger);
}

void StackArena::rollback(size_t size) {
  while (nodes_.size() > size) {
    table_[nodes_.back().slot] = -1;
    nodes_.pop_back();
  }
}

void StackArena::clear() { rollback(0); }

uint32_t StackArena::new_stamp() {
  if (++stamp_ == 0) {
    for (Node& n : nodes_) n.mark = 0;
    stamp_ = 1;
  }
  return stamp_;
}

}  // namespace slimkv::grammar
