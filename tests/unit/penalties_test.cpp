// Issue M §3: presence / frequency / repetition penalties and logit_bias on one row of logits (the pure function,
// against values computed by hand), the token counts kept per sequence, the parameters' ranges, and the engine
// applying them per request (off: the greedy tokens exactly as before).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "engine_helpers.h"
#include "model_helpers.h"
#include "sampling/penalties.h"

namespace slimkv::test {
namespace {

TEST(Penalties, MatchValuesComputedByHand) {
  // logits of 6 tokens; token 0 generated twice, 1 only in the prompt, 2 in the prompt and generated once, 4
  // generated three times; 3 and 5 never seen.
  std::vector<float> l = {2.0f, -1.0f, 0.5f, 3.0f, 0.0f, -2.0f};
  SamplingParams p;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  p.repetition_penalty = 2.0f;
  p.logit_bias = {{5, 10.0f}, {1, -1.0f}};
  const std::vector<TokenCount> seen = {{0, 2, false}, {1, 0, true}, {2, 1, true}, {4, 3, false}};
  apply_penalties(l.data(), 6, p, seen);
  // bias:       l5 = -2 + 10 = 8, l1 = -1 - 1 = -2
  // repetition: l0 = 2 / 2 = 1, l1 = -2 x 2 = -4, l2 = 0.5 / 2 = 0.25, l4 = 0 x 2 = 0
  // freq/pres:  l0 = 1 - (2 x 0.25 + 0.5) = 0, l2 = 0.25 - (0.25 + 0.5) = -0.5, l4 = 0 - (3 x 0.25 + 0.5) = -1.25
  EXPECT_EQ(l, (std::vector<float>{0.0f, -4.0f, -0.5f, 3.0f, -1.25f, 8.0f}));
}

TEST(Penalties, EachAloneAndNegativeValues) {
  const std::vector<TokenCount> seen = {{0, 3, false}, {1, 0, true}, {2, 1, false}};
  auto apply = [&](SamplingParams p) {
    std::vector<float> l = {1.0f, 1.0f, -1.0f, 1.0f};
    apply_penalties(l.data(), 4, p, seen);
    return l;
  };
  SamplingParams f;
  f.frequency_penalty = -0.5f;  // negative: repeated tokens become more likely, by count
  EXPECT_EQ(apply(f), (std::vector<float>{2.5f, 1.0f, -0.5f, 1.0f}));
  SamplingParams pr;
  pr.presence_penalty = 1.5f;  // once per generated token, whatever its count; prompt-only tokens untouched
  EXPECT_EQ(apply(pr), (std::vector<float>{-0.5f, 1.0f, -2.5f, 1.0f}));
  SamplingParams r;
  r.repetition_penalty = 0.5f;  // < 1 favours seen tokens, prompt ones included
  EXPECT_EQ(apply(r), (std::vector<float>{2.0f, 2.0f, -0.5f, 1.0f}));
  SamplingParams b;
  b.logit_bias = {{3, -100.0f}};
  EXPECT_EQ(apply(b), (std::vector<float>{1.0f, 1.0f, -1.0f, -99.0f}));
}

TEST(Penalties, OffLeavesTheRowBitForBitAndMaskedTokensStayMasked) {
  std::vector<float> l = {1.5f, -INFINITY, std::nanf(""), -0.0f};
  std::vector<float> before = l;
  SamplingParams off;
  ASSERT_FALSE(off.has_penalties());
  apply_penalties(l.data(), 4, off, std::vector<TokenCount>{{0, 2, true}, {1, 1, false}});
  EXPECT_EQ(std::memcmp(l.data(), before.data(), l.size() * sizeof(float)), 0);
  SamplingParams on;
  on.frequency_penalty = 2.0f;
  on.repetition_penalty = 1.3f;
  on.logit_bias = {{1, 100.0f}};
  apply_penalties(l.data(), 4, on, std::vector<TokenCount>{{1, 1, false}});
  EXPECT_EQ(l[1], -INFINITY);  // min_tokens' mask (-inf) survives bias and penalties
}

TEST(Penalties, TokenCountsFollowTheSequenceIncrementally) {
  std::vector<int32_t> tokens = {5, 5, 7, 7, 5, 9};  // 3 prompt tokens, then 7 5 9
  TokenCounts c;
  c.sync(tokens, 3);
  auto find = [&](int32_t id) {
    for (const TokenCount& t : c.seen()) {
      if (t.id == id) return t;
    }
    return TokenCount{-1, -1, false};
  };
  EXPECT_EQ(c.seen().size(), 3u);
  EXPECT_EQ(find(5).output_count, 1);
  EXPECT_TRUE(find(5).in_prompt);
  EXPECT_EQ(find(7).output_count, 1);
  EXPECT_TRUE(find(7).in_prompt);
  EXPECT_EQ(find(9).output_count, 1);
  EXPECT_FALSE(find(9).in_prompt);
  tokens.push_back(9);
  tokens.push_back(2);
  c.sync(tokens, 3);  // only the two new tokens are counted
  EXPECT_EQ(find(9).output_count, 2);
  EXPECT_EQ(find(2).output_count, 1);
  EXPECT_EQ(find(5).output_count, 1);
  EXPECT_EQ(c.seen().size(), 4u);
}

TEST(Penalties, RangesAreValidated) {
  auto valid = [](auto set) {
    SamplingParams p;
    set(p);
    try {
      p.validate();
      return true;
    } catch (const Error&) {
      return false;
    }
  };
  EXPECT_TRUE(valid([](SamplingParams& p) { p.presence_penalty = -2.0f; p.frequency_penalty = 2.0f; }));
  EXPECT_FALSE(valid([](SamplingParams& p) { p.presence_penalty = 2.5f; }));
  EXPECT_FALSE(valid([](SamplingParams& p) { p.frequency_penalty = -2.01f; }));
  EXPECT_FALSE(valid([](SamplingParams& p) { p.repetition_penalty = 0.0f; }));
  EXPECT_TRUE(valid([](SamplingParams& p) { p.repetition_penalty = 0.01f; }));
  EXPECT_FALSE(valid([](SamplingParams& p) { p.logit_bias = {{3, 100.5f}}; }));
  EXPECT_FALSE(valid([](SamplingParams& p) { p.logit_bias = {{-1, 1.0f}}; }));
}

std::vector<int32_t> penalty_run(const Model& m, const RequestParams& p, const std::vector<int32_t>& prompt) {
  Engine e(m, small_engine_config());
  auto id = e.add_request(prompt, p);
  EXPECT_TRUE(std::holds_alternative<RequestId>(id));
  std::vector<int32_t> out;
  while (e.has_unfinished()) {
    for (auto& ev : e.step()) {
      if (ev.token >= 0) out.push_back(ev.token);
    }
  }
  return out;
}

TEST(Penalties, TheEngineAppliesThemPerRequest) {
  const std::string stories = models_dir() + "/stories260K/stories260K.bin";
  SKIP_IF_MISSING(stories);
  auto m = load(stories);
  const std::vector<int32_t> prompt = m->tokenizer->encode("Once upon a time", true);
  RequestParams p;
  p.max_tokens = 40;
  p.ignore_eos = true;
  const std::vector<int32_t> plain = penalty_run(*m, p, prompt);
  EXPECT_EQ(plain, greedy(*m, prompt, 40));  // off: the greedy tokens as before
  RequestParams biased = p;
  biased.sampling.logit_bias = {{300, 100.0f}};
  EXPECT_EQ(penalty_run(*m, biased, prompt), std::vector<int32_t>(40, 300));
  RequestParams freq = p;
  freq.sampling.frequency_penalty = 2.0f;
  EXPECT_NE(penalty_run(*m, freq, prompt), plain);
  RequestParams bad = p;
  bad.sampling.logit_bias = {{m->config.vocab_size, 1.0f}};
  Engine e(*m, small_engine_config());
  auto refused = e.add_request(prompt, bad);
  ASSERT_TRUE(std::holds_alternative<std::string>(refused));
  EXPECT_NE(std::get<std::string>(refused).find("outside the vocabulary"), std::string::npos);
}

}  // namespace
}  // namespace slimkv::test
