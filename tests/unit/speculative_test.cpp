// Speculative decoding's pure parts (issue SD): the n-gram proposer (the longest recurring suffix, the most recent
// occurrence, capped at k and at the sequence's end), greedy verification (a speculative loop over a toy model
// gives the plain greedy tokens exactly, with drafts accepted), and sampled verification keeping the target's
// distribution (chi-square over 20,000 draws with a one-hot draft, the first token and the bonus token).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/check.h"
#include "sampling/ngram_proposer.h"
#include "sampling/speculative_verify.h"

namespace slimkv::test {
namespace {

std::vector<int32_t> propose(std::vector<int32_t> toks, int32_t min_n, int32_t max_n, int32_t k) {
  NgramProposerConfig c;
  c.min_n = min_n;
  c.max_n = max_n;
  c.num_speculative_tokens = k;
  c.validate();
  return propose_ngram(toks, c);
}

TEST(NgramProposer, TheLongestRecurringSuffixProposesWhatFollowedIt) {
  // suffix [2 3] recurs at 1..2 (followed by 4 5) and [3] alone at 6 (followed by 9): the longer match wins
  EXPECT_EQ(propose({1, 2, 3, 4, 5, 3, 9, 2, 3}, 1, 4, 2), (std::vector<int32_t>{4, 5}));
  // the most recent of equally long matches: [7] followed by 8 at 1, by 6 at 4
  EXPECT_EQ(propose({7, 8, 0, 7, 6, 7}, 1, 4, 1), (std::vector<int32_t>{6}));
  // capped at k, and at the sequence's end
  EXPECT_EQ(propose({1, 2, 3, 1, 2}, 1, 4, 8), (std::vector<int32_t>{3, 1, 2}));
  EXPECT_EQ(propose({1, 2, 3, 1, 2}, 1, 4, 1), (std::vector<int32_t>{3}));
  // no suffix of min_n recurs: nothing
  EXPECT_TRUE(propose({1, 2, 3, 4}, 1, 4, 4).empty());
  EXPECT_TRUE(propose({1, 2, 9, 1, 3}, 2, 4, 4).empty());
  EXPECT_TRUE(propose({}, 1, 4, 4).empty());
  EXPECT_TRUE(propose({5}, 1, 4, 4).empty());
  NgramProposerConfig bad;
  bad.min_n = 3;
  bad.max_n = 2;
  EXPECT_THROW(bad.validate(), Error);
}

// A toy deterministic model over 16 tokens: its logits favour a token fixed by the last two (a sequence that falls
// into cycles, as quoting text does), so n-gram drafts are often right.
constexpr int32_t kV = 16;
std::vector<float> toy_logits(std::span<const int32_t> seq) {
  std::vector<float> row(kV);
  const int32_t a = seq.size() > 0 ? seq.back() : 0, b = seq.size() > 1 ? seq[seq.size() - 2] : 0;
  for (int32_t t = 0; t < kV; ++t) row[t] = static_cast<float>(((a * 7 + b * 3 + t * 5) % kV) == 1 ? 10 : t % 3);
  return row;
}

TEST(SpeculativeVerify, GreedySpeculationGivesPlainGreedyTokensExactly) {
  for (int32_t k : {1, 2, 4, 8}) {
    std::vector<int32_t> plain = {3, 5, 3, 5};
    while (plain.size() < 200) {
      const auto row = toy_logits(plain);
      plain.push_back(static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin()));
    }
    std::vector<int32_t> spec = {3, 5, 3, 5};
    int64_t accepted = 0, drafted = 0;
    NgramProposerConfig c;
    c.num_speculative_tokens = k;
    while (spec.size() < 200) {
      const std::vector<int32_t> draft = propose_ngram(spec, c);
      std::vector<float> logits;  // the rows one batched forward would give: after spec, after each draft token
      std::vector<int32_t> ctx = spec;
      for (size_t i = 0; i <= draft.size(); ++i) {
        const auto row = toy_logits(ctx);
        logits.insert(logits.end(), row.begin(), row.end());
        if (i < draft.size()) ctx.push_back(draft[i]);
      }
      Sampler greedy(SamplingParams{});
      const SpecVerdict v = verify_drafts(draft, logits, kV, greedy);
      drafted += static_cast<int64_t>(draft.size());
      accepted += v.num_accepted;
      spec.insert(spec.end(), draft.begin(), draft.begin() + v.num_accepted);
      spec.push_back(v.next_token);
    }
    spec.resize(200);
    EXPECT_EQ(spec, plain) << "k " << k;
    EXPECT_GT(accepted, drafted / 4) << "k " << k << ": drafts on a cycling sequence are mostly right";
  }
}

double chi_square(const std::vector<int64_t>& counts, const std::vector<double>& p) {
  int64_t n = 0;
  for (int64_t c : counts) n += c;
  double chi = 0;
  for (size_t t = 0; t < p.size(); ++t) {
    const double e = p[t] * static_cast<double>(n);
    chi += (counts[t] - e) * (counts[t] - e) / e;
  }
  return chi;
}

// 20,000 draws of one speculative step (k = 1, temperature 1, each with its own seed): the first emitted token is
// distributed as the target's first row whether the draft is kept or not, and a bonus token (after a kept draft)
// as its second row. 5 degrees of freedom: 20.5 is the 0.001 critical value.
TEST(SpeculativeVerify, SampledVerificationKeepsTheTargetsDistribution) {
  constexpr int32_t V = 6;
  const std::vector<double> p0 = {0.30, 0.25, 0.20, 0.12, 0.08, 0.05}, p1 = {0.05, 0.10, 0.15, 0.20, 0.22, 0.28};
  std::vector<float> logits(2 * V);  // log p: the sampler's softmax at temperature 1 gives p back
  for (int32_t t = 0; t < V; ++t) {
    logits[t] = static_cast<float>(std::log(p0[t]));
    logits[V + t] = static_cast<float>(std::log(p1[t]));
  }
  for (int32_t x : {0, 2, 5}) {  // a likely, a middling and an unlikely draft
    std::vector<int64_t> first(V, 0), bonus(V, 0);
    int64_t kept = 0;
    for (int i = 0; i < 20000; ++i) {
      SamplingParams sp;
      sp.temperature = 1.0f;
      sp.seed = static_cast<uint64_t>(i) * 7919 + x;
      Sampler sampler(sp);
      const std::vector<int32_t> draft = {x};
      const SpecVerdict v = verify_drafts(draft, logits, V, sampler);
      ASSERT_GE(v.next_token, 0);
      if (v.num_accepted == 1) {
        ++first[x];
        ++bonus[v.next_token];
        ++kept;
      } else {
        ASSERT_NE(v.next_token, x) << "a rejected draft is never the correction";
        ++first[v.next_token];
      }
    }
    const double chi_first = chi_square(first, p0), chi_bonus = chi_square(bonus, p1);
    EXPECT_LT(chi_first, 20.5) << "draft " << x;
    EXPECT_LT(chi_bonus, 20.5) << "draft " << x;
    EXPECT_NEAR(static_cast<double>(kept) / 20000, p0[x], 0.02) << "a draft is kept with probability p(draft)";
    std::printf("draft %d: chi-square first %.2f, bonus %.2f (critical 20.5), %lld of 20000 drafts kept\n", x,
                chi_first, chi_bonus, static_cast<long long>(kept));
  }
}

TEST(SpeculativeVerify, BadShapesAreRefused) {
  const std::vector<float> logits(3 * 4, 0.0f);
  const std::vector<int32_t> two = {1, 2}, three = {1, 2, 3}, outside = {1, 9};
  Sampler greedy(SamplingParams{});
  EXPECT_NO_THROW(verify_drafts(two, logits, 4, greedy));
  EXPECT_THROW(verify_drafts(three, logits, 4, greedy), Error);
  EXPECT_THROW(verify_drafts(outside, logits, 4, greedy), Error);
}

}  // namespace
}  // namespace slimkv::test
