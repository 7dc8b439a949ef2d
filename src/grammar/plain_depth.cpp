#include "grammar/plain_depth.h"

#include <algorithm>

namespace slimkv::grammar {

uint32_t PlainDepthTable::shape_successor(uint32_t set, const PlainCharShape& shape, uint32_t at) {
  const uint32_t first = table_.step(set, shape.lo[at]);
  if (first == StackSetTable::kDead) return first;
  if (!table_.uniform(set, shape.lo[at], shape.hi[at]))
    for (int b = shape.lo[at] + 1; b <= shape.hi[at]; ++b)
      if (table_.step(set, static_cast<uint8_t>(b)) != first) return StackSetTable::kDead;
  return at + 1 == shape.length ? first : shape_successor(first, shape, at + 1);
}

uint32_t PlainDepthTable::successor(uint32_t set) {
  if (memo(set).successor == kUnknownSuccessor) {
    const uint32_t next = compute_successor(set);
    memo(set).successor = next;  // memo_ may have grown meanwhile
  }
  return memo(set).successor;
}

uint32_t PlainDepthTable::compute_successor(uint32_t set) {
  uint32_t common = StackSetTable::kDead;
  for (const PlainCharShape& shape : plain_char_shapes(alphabet_)) {
    const uint32_t next = shape_successor(set, shape, 0);
    if (next == StackSetTable::kDead || (common != StackSetTable::kDead && next != common)) return StackSetTable::kDead;
    common = next;
  }
  return common;
}

bool PlainDepthTable::starts_none(uint32_t set) const {
  for (const PlainCharShape& shape : plain_char_shapes(alphabet_))
    for (int b = shape.lo[0]; b <= shape.hi[0]; ++b)
      if (table_.next_bytes(set).test(static_cast<uint8_t>(b))) return false;
  return true;
}

PlainDepth PlainDepthTable::depth(uint32_t set, int want) {
  want = std::min(want, kMaxPlainChars);
  if (const Memo& m = memo(set); m.chars >= 0 && (m.final || m.chars >= want)) return {m.chars, m.exact};
  // Follow the chain of successors until a final depth, a dead end, a cycle (unbounded text) or `want` sets.
  std::vector<uint32_t> chain{set};
  int tail = 0;
  bool exact = false, final = true;
  for (;;) {
    const uint32_t next = successor(chain.back());
    if (next == StackSetTable::kDead) {
      exact = starts_none(chain.back());
      break;
    }
    if (const Memo& m = memo(next); m.chars >= 0 && m.final) {
      tail = m.chars + 1;
      exact = m.exact;
      break;
    }
    if (std::find(chain.begin(), chain.end(), next) != chain.end()) {
      tail = kMaxPlainChars;  // a cycle: any length
      break;
    }
    if (chain.size() >= static_cast<size_t>(want)) {  // enough: chain.back() has at least one more character
      tail = 1;
      final = false;
      break;
    }
    chain.push_back(next);
  }
  // chain.back() has depth `tail`, each earlier set one more; at the cap the depth is final but no longer exact.
  for (size_t i = chain.size(); i-- > 0; ++tail) {
    if (tail >= kMaxPlainChars) {
      exact = exact && tail == kMaxPlainChars;
      final = true;
    }
    Memo& m = memo(chain[i]);
    m.chars = std::min(tail, kMaxPlainChars);
    m.exact = exact && final;
    m.final = final;
  }
  const Memo& m = memo(set);
  return {m.chars, m.exact};
}

}  // namespace slimkv::grammar
