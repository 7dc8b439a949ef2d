// Embedding requests in the engine (issue E2, /v1/embeddings): the pooled final hidden states of a prompt — mean,
// first (CLS) and last — computed inside batched, chunked steps beside generation, with prefix hits (last only)
// and preemption, equal the states of the same prompt run alone through SequenceForward and pooled directly.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "engine/engine.h"
#include "engine_helpers.h"
#include "model_helpers.h"
#include "runner/sequence_forward.h"

namespace slimkv::test {
namespace {

// Every token's final hidden state of `ids` run alone, pooled: [dim].
std::vector<float> direct(const Model& m, const std::vector<int32_t>& ids, Pooling p) {
  const int32_t n = static_cast<int32_t>(ids.size()), dim = m.config.dim;
  ThreadPool pool(1);
  SequenceForward fwd(m, &pool, n);
  std::vector<float> h(static_cast<size_t>(n) * dim);  // [n, dim]
  fwd.hidden_states(ids, h.data());
  std::vector<float> out(dim, 0.0f);
  for (int32_t j = 0; j < dim; ++j) {
    if (p == Pooling::Mean) {
      double s = 0;
      for (int32_t t = 0; t < n; ++t) s += h[static_cast<size_t>(t) * dim + j];
      out[j] = static_cast<float>(s / n);
    } else {
      out[j] = h[static_cast<size_t>(p == Pooling::First ? 0 : n - 1) * dim + j];
    }
  }
  return out;
}

struct Pooled {
  std::vector<float> embedding;
  int32_t cached_tokens = 0;
};

// Runs every prompt (pooled ones by their pooling, the rest generating 48 tokens) in one engine; the pooled results.
std::map<size_t, Pooled> run(const Model& m, const EngineConfig& cfg, const std::vector<std::vector<int32_t>>& prompts,
                             const std::vector<Pooling>& pooling, int64_t* preemptions) {
  Engine e(m, cfg);
  std::map<RequestId, size_t> index;
  for (size_t i = 0; i < prompts.size(); ++i) {
    RequestParams p;
    p.ignore_eos = true;
    p.max_tokens = pooling[i] == Pooling::None ? 48 : 1;
    p.pooling = pooling[i];
    index[std::get<RequestId>(e.add_request(prompts[i], p))] = i;
  }
  std::map<size_t, Pooled> out;
  while (e.has_unfinished()) {
    e.step();
    e.check_integrity();
    for (auto& r : e.take_finished()) {
      if (r->params.pooling != Pooling::None) out[index[r->id]] = {r->embedding, r->num_cached_tokens};
    }
  }
  for (auto& r : e.take_finished()) {
    if (r->params.pooling != Pooling::None) out[index[r->id]] = {r->embedding, r->num_cached_tokens};
  }
  EXPECT_EQ(e.kv_manager().num_used_blocks(), 0);
  *preemptions = e.metrics().num_preemptions;
  return out;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t j = 0; j < want.size(); ++j) {
    ASSERT_NEAR(got[j], want[j], 1e-4f * (1.0f + std::fabs(want[j]))) << what << " [" << j << "]";
  }
}

class PooledInTheEngine : public ::testing::TestWithParam<bool> {};  // param: a pool tight enough to preempt

TEST_P(PooledInTheEngine, EqualsTheStatesOfThePromptRunAlone) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  std::mt19937 rng(5);
  std::vector<int32_t> shared(64);
  for (auto& t : shared) t = 3 + static_cast<int32_t>(rng() % 509);
  std::vector<std::vector<int32_t>> prompts;
  std::vector<Pooling> pooling;
  const Pooling kinds[] = {Pooling::Mean, Pooling::First, Pooling::Last, Pooling::None};
  for (int i = 0; i < 16; ++i) {  // half share a 65-token prefix: the prefix cache has something to offer
    std::vector<int32_t> p = {1};
    if (i % 2 == 0) p.insert(p.end(), shared.begin(), shared.end());
    const int extra = 1 + static_cast<int>(rng() % 70);
    for (int t = 0; t < extra; ++t) p.push_back(3 + static_cast<int32_t>(rng() % 509));
    prompts.push_back(std::move(p));
    pooling.push_back(kinds[i % 4]);
  }
  EngineConfig c = small_engine_config();
  c.cache.block_size = 8;
  c.sched.max_num_batched_tokens = 23;  // chunks that cut prompts mid-block
  if (GetParam()) {  // 24 blocks of 8 tokens for sequences of up to 136 + 48
    c.cache.kv_cache_memory_gib = 24.0 * 8 * 1280 / (1ull << 30);
    c.sched.max_model_len = 192;
  }
  int64_t preemptions = 0;
  const auto got = run(*m, c, prompts, pooling, &preemptions);
  if (GetParam()) EXPECT_GT(preemptions, 0);
  int32_t last_hits = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (pooling[i] == Pooling::None) continue;
    ASSERT_TRUE(got.count(i)) << "prompt " << i << " did not finish";
    expect_near(got.at(i).embedding, direct(*m, prompts[i], pooling[i]),
                fmt::format("prompt {} ({})", i, pooling_name(pooling[i])));
    if (pooling_reads_prefix(pooling[i])) EXPECT_EQ(got.at(i).cached_tokens, 0) << "prompt " << i;
    else last_hits += got.at(i).cached_tokens > 0;
  }
  if (!GetParam()) EXPECT_GT(last_hits, 0) << "last-token pooling may take prefix hits";
}

INSTANTIATE_TEST_SUITE_P(Pool, PooledInTheEngine, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "tight_pool" : "roomy_pool"; });

TEST(PooledInTheEngine, GenerationBesideIsUnchanged) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  std::vector<int32_t> prompt = {1, 40, 41, 42, 43, 44, 45, 46, 47, 48};
  EngineConfig c = small_engine_config();
  Engine e(*m, c);
  RequestParams gen;
  gen.ignore_eos = true;
  gen.max_tokens = 12;
  RequestParams emb;
  emb.max_tokens = 1;
  emb.pooling = Pooling::Mean;
  const RequestId g = std::get<RequestId>(e.add_request(prompt, gen));
  e.add_request(prompt, emb);
  std::vector<int32_t> tokens;
  while (e.has_unfinished()) {
    for (const auto& ev : e.step()) {
      if (ev.id == g && ev.token >= 0) tokens.push_back(ev.token);
    }
  }
  EXPECT_EQ(tokens, greedy(*m, prompt, 12));
}

}  // namespace
}  // namespace slimkv::test
