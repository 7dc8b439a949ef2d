#include "grammar/grammar_builder.h"

#include <algorithm>

#include "grammar/grammar_error.h"

namespace slimkv::grammar {

uint32_t GrammarBuilder::declare(std::string name) {
  if (g_.rule_alts.size() >= kMaxGrammarRules) grammar_fail("grammar too large: more than {} rules", kMaxGrammarRules);
  g_.rule_alts.emplace_back();
  g_.rule_names.push_back(std::move(name));
  defined_.push_back(false);
  return static_cast<uint32_t>(g_.rule_alts.size() - 1);
}

void GrammarBuilder::define(uint32_t rule, const std::vector<Seq>& alts) {
  SLIMKV_CHECK(rule < defined_.size() && !defined_[rule], "grammar rule {} defined twice", rule);
  defined_[rule] = true;
  for (const Seq& alt : alts) {
    if (g_.elements.size() + alt.size() + 1 > kMaxGrammarElements)
      grammar_fail("grammar too large: more than {} elements", kMaxGrammarElements);
    g_.rule_alts[rule].push_back(static_cast<uint32_t>(g_.elements.size()));
    g_.elements.insert(g_.elements.end(), alt.begin(), alt.end());
    g_.elements.push_back({ElementKind::kEnd, 0});
  }
  if (alts.empty()) grammar_fail("grammar rule '{}' has no alternatives (it can never match)", g_.rule_names[rule]);
}

Element GrammarBuilder::rule(std::string name, const std::vector<Seq>& alts) {
  uint32_t id = declare(std::move(name));
  define(id, alts);
  return ref(id);
}

Element GrammarBuilder::bytes(const ByteClass& cls) {
  if (cls.empty()) grammar_fail("empty byte class (a character class that matches nothing)");
  for (size_t i = 0; i < g_.classes.size(); ++i)
    if (g_.classes[i] == cls) return {ElementKind::kBytes, static_cast<uint32_t>(i)};
  g_.classes.push_back(cls);
  return {ElementKind::kBytes, static_cast<uint32_t>(g_.classes.size() - 1)};
}

Element GrammarBuilder::byte(uint8_t b) {
  ByteClass c;
  c.set(b);
  return bytes(c);
}

Seq GrammarBuilder::literal(std::string_view text) {
  Seq out;
  for (char ch : text) out.push_back(byte(static_cast<uint8_t>(ch)));
  return out;
}

Element GrammarBuilder::optional(const Seq& x, const std::string& name) { return rule(name, {x, Seq{}}); }

Element GrammarBuilder::star(const Seq& x, const std::string& name) {
  uint32_t id = declare(name);
  Seq loop = x;
  loop.push_back(ref(id));
  define(id, {loop, Seq{}});
  return ref(id);
}

Seq GrammarBuilder::repeat(const Seq& x, uint32_t min, uint32_t max, const std::string& name) {
  if (min > kMaxRepeat || (max != kUnbounded && max > kMaxRepeat))
    grammar_fail("{}: repetition count above {} is not supported", name, kMaxRepeat);
  if (max < min) grammar_fail("{}: repetition minimum {} is above its maximum {}", name, min, max);
  Seq item = x;
  if (x.size() > 1 && min > 1) item = Seq{rule(name + "-item", {x})};  // copies of one reference, not of x
  Seq out;
  for (uint32_t i = 0; i < min; ++i) seq_append(out, item);
  if (max == kUnbounded) {
    out.push_back(star(item, name + "-star"));
  } else if (max > min) {
    // opt_k ::= item opt_{k-1} | "" : right-recursive, so the parse stack stays flat.
    Element tail = optional(item, name + "-opt1");
    for (uint32_t k = 2; k <= max - min; ++k) tail = optional(seq(item, tail), name + "-opt" + std::to_string(k));
    out.push_back(tail);
  }
  return out;
}

namespace {

// Rules that can match the empty text (fixpoint).
std::vector<bool> nullable_rules(const Grammar& g) {
  std::vector<bool> nullable(g.rule_alts.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < g.rule_alts.size(); ++r) {
      if (nullable[r]) continue;
      for (uint32_t start : g.rule_alts[r]) {
        uint32_t p = start;
        while (g.elements[p].kind == ElementKind::kRule && nullable[g.elements[p].value]) ++p;
        if (g.elements[p].kind == ElementKind::kEnd) {
          nullable[r] = changed = true;
          break;
        }
      }
    }
  }
  return nullable;
}

struct FirstEdge {
  uint32_t to;
  bool tail;  // the reference ends its alternative (a tail call: no stack growth)
};

// Strongly connected components (iterative Tarjan) of a graph given as adjacency lists; returns a component id
// per node.
std::vector<uint32_t> components(const std::vector<std::vector<FirstEdge>>& adj) {
  constexpr uint32_t kNone = UINT32_MAX;
  const size_t n = adj.size();
  std::vector<uint32_t> index(n, kNone), low(n, 0), comp(n, kNone), scc_stack;
  std::vector<bool> on_stack(n, false);
  std::vector<std::pair<uint32_t, size_t>> call;
  uint32_t counter = 0, comps = 0;
  for (uint32_t r0 = 0; r0 < n; ++r0) {
    if (index[r0] != kNone) continue;
    call.push_back({r0, 0});
    while (!call.empty()) {
      auto [r, i] = call.back();
      if (i == 0) {
        index[r] = low[r] = counter++;
        scc_stack.push_back(r);
        on_stack[r] = true;
      }
      if (i < adj[r].size()) {
        call.back().second++;
        const uint32_t s = adj[r][i].to;
        if (index[s] == kNone) call.push_back({s, 0});
        else if (on_stack[s]) low[r] = std::min(low[r], index[s]);
        continue;
      }
      if (low[r] == index[r]) {
        uint32_t s;
        do {
          s = scc_stack.back();
          scc_stack.pop_back();
          on_stack[s] = false;
          comp[s] = comps;
        } while (s != r);
        ++comps;
      }
      call.pop_back();
      if (!call.empty()) low[call.back().first] = std::min(low[call.back().first], low[r]);
    }
  }
  return comp;
}

}  // namespace

// The "rule r can begin with rule s" graph: a cycle in it through a reference that is not in tail position grows
// the parse stack on every turn (true left recursion: the parser would expand forever) and is refused by name;
// cycles of tail references only (e.g. (a?)*) end on an identical interned stack.
void GrammarBuilder::check_left_recursion() const {
  const std::vector<bool> nullable = nullable_rules(g_);
  std::vector<std::vector<FirstEdge>> first(g_.rule_alts.size());
  for (size_t r = 0; r < first.size(); ++r)
    for (uint32_t start : g_.rule_alts[r])
      for (uint32_t p = start; g_.elements[p].kind == ElementKind::kRule; ++p) {
        first[r].push_back({g_.elements[p].value, g_.elements[p + 1].kind == ElementKind::kEnd});
        if (!nullable[g_.elements[p].value]) break;
      }
  const std::vector<uint32_t> comp = components(first);
  for (size_t r = 0; r < first.size(); ++r)
    for (const FirstEdge& e : first[r])
      if (!e.tail && comp[e.to] == comp[r])
        grammar_fail("left recursion through grammar rule '{}' (it could expand forever)", g_.rule_names[e.to]);
}

// A rule none of whose alternatives can ever finish (e.g. a ::= a, a $ref cycle that never reaches any text)
// would make a dead grammar: refused by name.
void GrammarBuilder::check_productive() const {
  const size_t n = g_.rule_alts.size();
  std::vector<bool> productive(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (productive[r]) continue;
      for (uint32_t start : g_.rule_alts[r]) {
        uint32_t p = start;
        while (g_.elements[p].kind == ElementKind::kBytes ||
               (g_.elements[p].kind == ElementKind::kRule && productive[g_.elements[p].value]))
          ++p;
        if (g_.elements[p].kind == ElementKind::kEnd) {
          productive[r] = changed = true;
          break;
        }
      }
    }
  }
  for (size_t r = 0; r < n; ++r)
    if (!productive[r])
      grammar_fail("grammar rule '{}' can never match (recursion that never reaches any text)", g_.rule_names[r]);
}

std::shared_ptr<const Grammar> GrammarBuilder::build(uint32_t root) {
  for (size_t r = 0; r < defined_.size(); ++r)
    SLIMKV_CHECK(defined_[r], "grammar rule '{}' declared but never defined", g_.rule_names[r]);
  SLIMKV_CHECK(root < defined_.size(), "grammar root rule {} does not exist", root);
  check_productive();
  check_left_recursion();
  g_.root = root;
  return std::make_shared<const Grammar>(std::move(g_));
}

}  // namespace slimkv::grammar
