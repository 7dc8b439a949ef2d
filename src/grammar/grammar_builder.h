// Builds a Grammar rule by rule: literals, byte classes, rule references and the repetition combinators the
// compilers share, then checks it (every rule defined, no left recursion, no empty class, size bounds).
// Owns: GrammarBuilder, Seq. Must not know: JSON schema, regex syntax, tokens, parse state.
#pragma once
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"

namespace slimkv::grammar {

using Seq = std::vector<Element>;  // one alternative's elements (no kEnd)
inline constexpr uint32_t kUnbounded = std::numeric_limits<uint32_t>::max();

class GrammarBuilder {
 public:
  uint32_t declare(std::string name);                       // a rule defined later (allows recursion)
  void define(uint32_t rule, const std::vector<Seq>& alts);  // each rule exactly once
  Element rule(std::string name, const std::vector<Seq>& alts);  // declare + define; returns a reference
  static Element ref(uint32_t rule) { return {ElementKind::kRule, rule}; }

  Element bytes(const ByteClass& cls);
  Element byte(uint8_t b);
  Seq literal(std::string_view text);

  Element optional(const Seq& x, const std::string& name);  // x | ""
  Element star(const Seq& x, const std::string& name);      // x*  (right-recursive: no stack growth)
  // x{min,max} (max = kUnbounded for x{min,}); counts above kMaxRepeat are a GrammarError naming `what`.
  Seq repeat(const Seq& x, uint32_t min, uint32_t max, const std::string& name);

  const ByteClass& grammar_class(const Element& bytes_element) const { return g_.classes[bytes_element.value]; }
  size_t element_count() const { return g_.elements.size(); }
  // Checks and freezes the grammar; the builder must not be used afterwards.
  std::shared_ptr<const Grammar> build(uint32_t root);

 private:
  void check_left_recursion() const;
  void check_productive() const;
  Grammar g_;
  std::vector<bool> defined_;
};

// Concatenation helpers: seq(a, b, ...) of Elements and Seqs.
inline void seq_append(Seq& out, const Element& e) { out.push_back(e); }
inline void seq_append(Seq& out, const Seq& s) { out.insert(out.end(), s.begin(), s.end()); }
template <typename... Parts>
Seq seq(const Parts&... parts) {
  Seq out;
  (seq_append(out, parts), ...);
  return out;
}

}  // namespace slimkv::grammar
