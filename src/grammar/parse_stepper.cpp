#include "grammar/parse_stepper.h"

#include <algorithm>

#include "grammar/grammar_error.h"

namespace slimkv::grammar {

void ParseStepper::start(StackSet& out) {
  out.clear();
  stamp_ = arena_.new_stamp();
  for (uint32_t alt : g_.rule_alts[g_.root]) push_pos(alt, kEmptyStack, out);
}

void ParseStepper::step(const StackSet& in, uint8_t byte, StackSet& out) {
  out.clear();
  stamp_ = arena_.new_stamp();
  for (int32_t h : in.tops) {
    const StackArena::Node& n = arena_.node(h);
    if (!g_.classes[g_.elements[n.pos].value].test(byte)) continue;
    push_pos(n.pos + 1, n.parent, out);
  }
}

ByteClass ParseStepper::next_bytes(const StackSet& in) const {
  ByteClass all;
  for (int32_t h : in.tops) all |= g_.classes[g_.elements[arena_.node(h).pos].value];
  return all;
}

// Continue at `pos` above `parent`: the end of an alternative returns to the parent without a node.
void ParseStepper::push_pos(uint32_t pos, int32_t parent, StackSet& out) {
  if (g_.elements[pos].kind == ElementKind::kEnd) {
    expand(parent, out);
    return;
  }
  int32_t h = arena_.intern(pos, parent);
  if (h != kTooDeep) expand(h, out);
}

void ParseStepper::expand(int32_t h, StackSet& out) {
  if (h == kEmptyStack) {
    out.complete = true;
    return;
  }
  StackArena::Node& n = arena_.node(h);
  if (n.mark == stamp_) return;
  n.mark = stamp_;
  const Element& e = g_.elements[n.pos];
  if (e.kind == ElementKind::kBytes) {
    add_top(h, out);
    return;
  }
  // A rule reference: its return point is the next element, or straight the parent when that is the end (tail
  // call), so right recursion never deepens the stack.
  const uint32_t pos = n.pos;
  const int32_t parent = n.parent;
  int32_t ret = parent;
  if (g_.elements[pos + 1].kind != ElementKind::kEnd) {
    ret = arena_.intern(pos + 1, parent);
    if (ret == kTooDeep) return;
  }
  for (uint32_t alt : g_.rule_alts[e.value]) push_pos(alt, ret, out);
}

void ParseStepper::add_top(int32_t h, StackSet& out) {
  if (out.tops.size() >= kMaxStacks)
    grammar_fail("grammar too ambiguous: more than {} parses alive at once", kMaxStacks);
  out.tops.push_back(h);
}

std::vector<uint32_t> ParseStepper::materialize(int32_t h) const {
  std::vector<uint32_t> out;
  for (; h >= 0; h = arena_.node(h).parent) out.push_back(arena_.node(h).pos);
  std::reverse(out.begin(), out.end());
  return out;
}

int32_t ParseStepper::import(const std::vector<uint32_t>& positions) {
  int32_t h = kEmptyStack;
  for (uint32_t pos : positions) h = arena_.intern(pos, h);
  return h;
}

}  // namespace slimkv::grammar
