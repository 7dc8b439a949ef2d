// The engine core (issue B): batched greedy output equals single-request output for every block size, chunk size
// and prefix-caching setting; preemption, aborts and prefix caching keep outputs identical and free every block.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "engine/engine.h"
#include "engine_helpers.h"
#include "model_helpers.h"

namespace slimkv::test {
namespace {

using Job = TestRequest;


std::vector<Job> mixed_jobs(int32_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> shared(200);
  for (auto& t : shared) t = 3 + static_cast<int32_t>(rng() % 509);
  std::vector<Job> jobs;
  for (int32_t i = 0; i < n; ++i) {
    Job j;
    int32_t len = i == 0 ? 1 : i == 1 ? 400 : 1 + static_cast<int32_t>(rng() % 400);
    j.prompt.push_back(1);
    if (i % 4 == 0 && len > 50) {  // every 4th shares a long prefix with the others like it
      j.prompt.insert(j.prompt.end(), shared.begin(), shared.begin() + std::min<int32_t>(len - 1, 200));
    }
    while (static_cast<int32_t>(j.prompt.size()) < len) j.prompt.push_back(3 + static_cast<int32_t>(rng() % 509));
    j.max_tokens = 1 + static_cast<int32_t>(rng() % 40);
    j.arrival_step = static_cast<int32_t>(rng() % 30);
    jobs.push_back(std::move(j));
  }
  return jobs;
}

std::vector<int32_t> alone(const Model& m, const Job& j) { return greedy(m, j.prompt, j.max_tokens); }


EngineConfig small_config(int32_t block_size, int32_t chunk, bool caching) {
  EngineConfig c = small_engine_config();
  c.cache.block_size = block_size;
  c.cache.kv_cache_memory_gib = 0.05;
  c.cache.enable_prefix_caching = caching;
  c.sched.max_num_batched_tokens = chunk;
  return c;
}

class BatchedEqualsSingle : public ::testing::TestWithParam<std::tuple<int32_t, int32_t, bool>> {};

TEST_P(BatchedEqualsSingle, ThirtyTwoMixedRequests) {
  SKIP_IF_MISSING(k260);
  static auto m = load(k260);
  static auto jobs = mixed_jobs(32, 7);
  static std::vector<std::vector<int32_t>> expected = [] {
    std::vector<std::vector<int32_t>> e;
    for (const auto& j : jobs) e.push_back(alone(*m, j));
    return e;
  }();
  auto [bs, chunk, caching] = GetParam();
  EngineRun r = run_requests(*m, small_config(bs, chunk, caching), jobs);
  for (size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(r.tokens[i], expected[i]) << "job " << i;
  EXPECT_EQ(r.used_blocks_at_end, 0);
  EXPECT_EQ(r.metrics.num_finished, 32);
  if (caching) EXPECT_GT(r.metrics.prefix_hit_tokens, 0);
  else EXPECT_EQ(r.metrics.prefix_hit_tokens, 0);
}

INSTANTIATE_TEST_SUITE_P(BlockChunkCaching, BatchedEqualsSingle,
                         ::testing::Combine(::testing::Values(1, 8, 16), ::testing::Values(1, 7, 512),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return fmt::format("bs{}_chunk{}_{}", std::get<0>(info.param), std::get<1>(info.param),
                                              std::get<2>(info.param) ? "prefix" : "noprefix");
                         });

TEST(EngineCore, PreemptionUnderATightBudgetKeepsOutputsAndFreesEverything) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  auto jobs = mixed_jobs(16, 11);
  for (auto& j : jobs) j.arrival_step = 0;
  EngineConfig c = small_config(8, 512, true);
  // 5 layers x 2 x 32 floats x 4 bytes = 1280 bytes per token; 80 blocks of 8 tokens = 640 tokens in all.
  c.cache.kv_cache_memory_gib = 80.0 * 8 * 1280 / (1ull << 30);
  EngineRun r = run_requests(*m, c, jobs);
  for (size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(r.tokens[i], alone(*m, jobs[i])) << "job " << i;
  EXPECT_GT(r.metrics.num_preemptions, 0);
  EXPECT_EQ(r.used_blocks_at_end, 0);
}

TEST(EngineCore, AbortWhileWaitingMidPrefillAndMidDecodeFreesBlocks) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  EngineConfig c = small_config(8, 16, true);
  c.sched.max_num_seqs = 2;
  Engine e(*m, c);
  RequestParams p;
  p.ignore_eos = true;
  p.max_tokens = 50;
  std::vector<int32_t> prompt(100, 300);
  prompt[0] = 1;
  auto a = std::get<RequestId>(e.add_request(prompt, p));   // will be mid-decode
  auto b = std::get<RequestId>(e.add_request(prompt, p));   // shares a's prefix; mid-prefill
  auto w = std::get<RequestId>(e.add_request(prompt, p));   // waits (max_num_seqs = 2)
  for (int i = 0; i < 7; ++i) e.step();                      // a: 100 prompt tokens at 16/step done in 7 steps
  e.check_integrity();
  EXPECT_TRUE(e.abort(w));                                   // waiting
  EXPECT_TRUE(e.abort(b));                                   // mid-prefill (b got budget left over by a)
  e.check_integrity();
  for (int i = 0; i < 3; ++i) e.step();
  EXPECT_TRUE(e.abort(a));                                   // mid-decode
  e.check_integrity();
  EXPECT_EQ(e.kv_manager().num_used_blocks(), 0);
  EXPECT_FALSE(e.has_unfinished());
  EXPECT_FALSE(e.abort(a));                                  // unknown now
  EXPECT_EQ(e.metrics().num_aborted, 3);
}

TEST(EngineCore, SharedPrefixBlockSurvivesTheAbortOfOneSharer) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  Engine e(*m, small_config(8, 512, true));
  RequestParams p;
  p.ignore_eos = true;
  p.max_tokens = 20;
  std::vector<int32_t> prompt(64, 400);
  prompt[0] = 1;
  auto a = std::get<RequestId>(e.add_request(prompt, p));
  e.step();  // a's prompt computed; its full blocks are registered in the prefix cache
  auto b = std::get<RequestId>(e.add_request(prompt, p));
  e.step();  // b hits a's blocks: shared, ref count 2
  const BlockPool& pool = e.kv_manager().pool();
  int32_t shared = 0;
  for (BlockId id = 0; id < pool.num_blocks(); ++id) shared += pool.ref_count(id) == 2;
  EXPECT_GE(shared, 7);
  EXPECT_TRUE(e.abort(a));
  e.check_integrity();
  for (BlockId id = 0; id < pool.num_blocks(); ++id) EXPECT_LE(pool.ref_count(id), 1);
  std::vector<int32_t> out_b;
  while (e.has_unfinished()) {
    for (auto& ev : e.step()) if (ev.id == b && ev.token >= 0) out_b.push_back(ev.token);
  }
  EXPECT_EQ(out_b.size(), 19u);  // one token came in the step that admitted b
  EXPECT_EQ(e.kv_manager().num_used_blocks(), 0);
}

TEST(EngineCore, SecondRequestWithA256TokenSharedPrefixHitsTheCache) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  Engine e(*m, small_config(8, 512, true));
  RequestParams p;
  p.ignore_eos = true;
  p.max_tokens = 10;
  std::mt19937 rng(5);
  std::vector<int32_t> prefix = {1};
  while (prefix.size() < 256) prefix.push_back(3 + static_cast<int32_t>(rng() % 509));
  auto first = prefix, second = prefix;
  for (int i = 0; i < 20; ++i) first.push_back(300 + i), second.push_back(300 + i);
  auto a = std::get<RequestId>(e.add_request(first, p));
  while (e.has_unfinished()) e.step();
  auto b = std::get<RequestId>(e.add_request(second, p));
  while (e.has_unfinished()) e.step();
  auto done = e.take_finished();
  ASSERT_EQ(done.size(), 2u);
  const Request& ra = *done[0];
  const Request& rb = *done[1];
  ASSERT_EQ(ra.id, a);
  ASSERT_EQ(rb.id, b);
  EXPECT_EQ(ra.num_cached_tokens, 0);
  EXPECT_GE(rb.num_cached_tokens, 256 - 8);
  EXPECT_EQ(std::vector<int32_t>(rb.tokens.begin() + rb.num_prompt_tokens, rb.tokens.end()),
            std::vector<int32_t>(ra.tokens.begin() + ra.num_prompt_tokens, ra.tokens.end()));
  EXPECT_GE(e.metrics().prefix_hit_tokens, 248);
}

TEST(EngineCore, BadConfigurationsAreClearErrors) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  auto expect_error = [&](const EngineConfig& c, const std::string& needle) {
    expect_engine_error<Engine>(*m, c, needle);
  };
  EngineConfig c = small_config(8, 512, true);
  c.cache.block_size = 0;
  expect_error(c, "--block-size");
  c.cache.block_size = 12;
  expect_error(c, "power of two");
  c = small_config(8, 512, true);
  c.cache.kv_cache_memory_gib = 1e-6;
  expect_error(c, "--max-model-len 512 needs");
  c = small_config(8, 512, true);
  c.sched.max_num_seqs = -1;
  expect_error(c, "--max-num-seqs");
  c = small_config(8, 512, true);
  c.sched.max_num_batched_tokens = 0;
  expect_error(c, "--max-num-batched-tokens");
  c = small_config(8, 512, true);
  c.sched.max_model_len = 4096;
  expect_error(c, "exceeds the model's context");
}

TEST(EngineCore, RefusedRequestsSayWhy) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  EngineConfig c = small_config(8, 512, true);
  c.sched.max_waiting = 1;
  Engine e(*m, c);
  RequestParams p;
  EXPECT_NE(std::get<std::string>(e.add_request({}, p)).find("empty"), std::string::npos);
  EXPECT_NE(std::get<std::string>(e.add_request(std::vector<int32_t>(600, 5), p)).find("maximum model length"),
            std::string::npos);
  EXPECT_NE(std::get<std::string>(e.add_request({1, 9999}, p)).find("outside the vocabulary"), std::string::npos);
  EXPECT_TRUE(std::holds_alternative<RequestId>(e.add_request({1, 5}, p)));
  EXPECT_NE(std::get<std::string>(e.add_request({1, 5}, p)).find("queue is full"), std::string::npos);
  EXPECT_EQ(e.metrics().num_rejected, 4);
}

}  // namespace
}  // namespace slimkv::test
