#include "grammar/choice_compiler.h"

#include <algorithm>

#include "grammar/grammar_builder.h"
#include "grammar/grammar_error.h"

namespace slimkv::grammar {
namespace {

// The rule for sorted[lo, hi), which share their first `depth` bytes: each group with the same next byte becomes
// its common prefix followed by the rule for the group's remainders; a choice ending here adds "".
Seq choice_node(GrammarBuilder& b, const std::vector<std::string>& sorted, size_t lo, size_t hi, size_t depth) {
  std::vector<Seq> alts;
  size_t i = lo;
  if (i < hi && sorted[i].size() == depth) {
    alts.push_back(Seq{});
    ++i;
  }
  while (i < hi) {
    size_t j = i;
    while (j < hi && sorted[j][depth] == sorted[i][depth]) ++j;
    size_t common = depth + 1;  // the group's longest common prefix
    while (common < sorted[i].size() && common < sorted[j - 1].size() && sorted[i][common] == sorted[j - 1][common])
      ++common;
    Seq alt = b.literal(std::string_view(sorted[i]).substr(depth, common - depth));
    if (j - i > 1 || sorted[i].size() > common) seq_append(alt, choice_node(b, sorted, i, j, common));
    alts.push_back(alt);
    i = j;
  }
  if (alts.size() == 1) return alts[0];
  return Seq{b.rule("choice" + std::to_string(depth), alts)};
}

}  // namespace

Seq choice_seq(GrammarBuilder& b, std::vector<std::string> choices) {
  SLIMKV_CHECK(!choices.empty(), "choice_seq needs at least one choice");
  std::sort(choices.begin(), choices.end());
  choices.erase(std::unique(choices.begin(), choices.end()), choices.end());
  return choice_node(b, choices, 0, choices.size(), 0);
}

std::shared_ptr<const Grammar> compile_choice(const std::vector<std::string>& choices) {
  if (choices.empty()) grammar_fail("guided choice: the list of choices is empty");
  GrammarBuilder b;
  uint32_t root = b.declare("root");
  b.define(root, {choice_seq(b, choices)});
  return b.build(root);
}

}  // namespace slimkv::grammar
