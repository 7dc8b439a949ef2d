// A compiled, immutable context-free grammar over bytes (llama.cpp's GBNF internals): rules of alternatives of
// sequences of byte classes and rule references, flattened into one element array. Shared between sequences.
// Owns: Grammar, Element, ByteClass and the size bounds. Must not know: tokens, JSON, regex syntax, parse state.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace slimkv::grammar {

// A set of bytes as a 256-bit mask.
struct ByteClass {
  std::array<uint64_t, 4> bits{};
  bool test(uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
  void set(uint8_t b) { bits[b >> 6] |= uint64_t{1} << (b & 63); }
  void set_range(uint8_t lo, uint8_t hi) {
    for (int b = lo; b <= hi; ++b) set(static_cast<uint8_t>(b));
  }
  void clear(uint8_t b) { bits[b >> 6] &= ~(uint64_t{1} << (b & 63)); }
  bool empty() const { return (bits[0] | bits[1] | bits[2] | bits[3]) == 0; }
  ByteClass& operator|=(const ByteClass& o) {
    for (int i = 0; i < 4; ++i) bits[i] |= o.bits[i];
    return *this;
  }
  bool operator==(const ByteClass&) const = default;
};

enum class ElementKind : uint8_t { kBytes, kRule, kEnd };

// One slot of a flattened alternative: match a byte of class `value`, expand rule `value`, or end the alternative.
struct Element {
  ElementKind kind = ElementKind::kEnd;
  uint32_t value = 0;
};

// Bounds every compiler and the matcher enforce (exceeding one is a GrammarError, never a hang).
inline constexpr size_t kMaxGrammarElements = 4'000'000;
inline constexpr size_t kMaxGrammarRules = 1'000'000;
inline constexpr uint32_t kMaxRepeat = 10'000;        // the largest bounded count ({m,n}, maxLength, maxItems)
inline constexpr uint32_t kMaxStackDepth = 2'000;     // deeper parse stacks are pruned (text nests too deep)
inline constexpr size_t kMaxStacks = 4'096;           // more live parse stacks: the grammar is too ambiguous

struct Grammar {
  std::vector<Element> elements;                  // every alternative, each closed by a kEnd element
  std::vector<std::vector<uint32_t>> rule_alts;   // rule id -> start index of each alternative in `elements`
  std::vector<std::string> rule_names;            // rule id -> name (for errors and dumps)
  std::vector<ByteClass> classes;                 // byte class id -> bytes
  uint32_t root = 0;

  // GBNF-like text of every rule (for tests and debugging).
  std::string dump() const;
};

}  // namespace slimkv::grammar
