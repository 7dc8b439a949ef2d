// Engine request parameters the server exposes: min_tokens masks EOS until enough tokens exist, and logprobs
// report the sampled token's log-probability and the k most likely, without changing what is sampled.
#include <gtest/gtest.h>

#include <cmath>

#include "engine_helpers.h"
#include "model_helpers.h"
#include "sampling/logprobs.h"

namespace slimkv::test {
namespace {

const std::string kStories = models_dir() + "/stories260K/stories260K.bin";

struct EngineOut {
  std::vector<StepEvent> events;
  FinishReason finish = FinishReason::None;
};

EngineOut run_one(const Model& m, const RequestParams& p, std::vector<int32_t> prompt) {
  Engine e(m, small_engine_config());
  auto id = e.add_request(std::move(prompt), p);
  EXPECT_TRUE(std::holds_alternative<RequestId>(id));
  EngineOut out;
  while (e.has_unfinished()) {
    for (auto& ev : e.step()) out.events.push_back(ev);
  }
  for (auto& r : e.take_finished()) out.finish = r->finish;
  EXPECT_EQ(e.kv_manager().num_used_blocks(), 0);
  return out;
}

int32_t num_tokens(const EngineOut& r) {
  int32_t n = 0;
  for (const auto& e : r.events) n += e.token >= 0;
  return n;
}

TEST(RequestParams, MinTokensMasksEosUntilReached) {
  SKIP_IF_MISSING(kStories);
  auto m = load(kStories);
  RequestParams p;
  p.max_tokens = 500;
  p.eos_id = m->tokenizer->bos_id();  // llama2.c's stories end with BOS (run.c stops on it), not EOS
  p.sampling.temperature = 1.0f;
  const std::vector<int32_t> prompt = {m->tokenizer->bos_id()};
  EngineOut free_run;
  for (p.sampling.seed = 0; p.sampling.seed < 20; ++p.sampling.seed) {  // a seed whose story ends
    free_run = run_one(*m, p, prompt);
    if (free_run.finish == FinishReason::Stop) break;
  }
  ASSERT_EQ(free_run.finish, FinishReason::Stop) << "no sampled story ended within 500 tokens";
  const int32_t n = num_tokens(free_run);
  p.min_tokens = n + 10;
  EngineOut forced = run_one(*m, p, prompt);
  EXPECT_GE(num_tokens(forced), n + 10);
  for (int32_t i = 0; i < n; ++i) EXPECT_EQ(forced.events[i].token, free_run.events[i].token) << i;
}

TEST(RequestParams, LogprobsDescribeTheSampledTokenAndDoNotChangeIt) {
  SKIP_IF_MISSING(kStories);
  auto m = load(kStories);
  RequestParams p;
  p.max_tokens = 12;
  p.ignore_eos = true;
  p.sampling.temperature = 0.9f;
  p.sampling.seed = 7;
  const std::vector<int32_t> prompt = m->tokenizer->encode("Once upon a time", true);
  EngineOut plain = run_one(*m, p, prompt);
  p.logprobs = 3;
  EngineOut with = run_one(*m, p, prompt);
  ASSERT_EQ(plain.events.size(), with.events.size());
  for (size_t i = 0; i < with.events.size(); ++i) {
    EXPECT_EQ(with.events[i].token, plain.events[i].token);
    ASSERT_EQ(with.events[i].top_logprobs.size(), 3u);
    EXPECT_LE(with.events[i].logprob, 0.0f);
    EXPECT_GE(with.events[i].top_logprobs[0].second, with.events[i].top_logprobs[1].second);
    EXPECT_GE(with.events[i].top_logprobs[0].second, with.events[i].logprob);
  }
}

TEST(Logprobs, NormalisedAndOrdered) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f};
  TokenLogprobs lp = compute_logprobs(logits.data(), 4, 2, 4);
  double sum = 0;
  for (auto& [id, v] : lp.top) sum += std::exp(v);
  EXPECT_NEAR(sum, 1.0, 1e-6);
  EXPECT_EQ(lp.top[0].first, 1);  // ties go to the lower id
  EXPECT_EQ(lp.top[1].first, 3);
  EXPECT_EQ(lp.top[2].first, 2);
  EXPECT_NEAR(lp.logprob, lp.top[2].second, 1e-7);
  EXPECT_THROW(compute_logprobs(logits.data(), 4, 4, 1), Error);
}

}  // namespace
}  // namespace slimkv::test
