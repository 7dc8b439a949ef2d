// Speculative decoding in the engine (issue SD, n-gram): the same requests with --speculative-config give
// byte-identical greedy tokens to plain decoding, batched, with chunked prefill and under preemption, on every
// family's synthetic file whose cache rolls back (full attention: Llama, Qwen2/3, Qwen3-MoE, Phi-3, DeepSeek-V3's
// latent cache, stories260K with int8 and tq4 pages; windows: Gemma 3's sliding window of 16, static retention's
// sinks + window, a tq4 cache's residual window; select mode's index; dynamic retention, dropping or merging, its
// importance from accepted rows only; Qwen3-Next's recurrent states, a state per verified row; DeepSeek-V4's
// compressed streams, written by position) — with drafts accepted. Sampled requests:
// plain sampling's tokens.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "engine_helpers.h"
#include "model/kv_projection.h"
#include "model_helpers.h"
#include "qwen3next_model.h"

namespace slimkv::test {
namespace {

// Prompts that quote themselves (a repeated phrase): prompt lookup finds drafts; random models loop too.
std::vector<TestRequest> quoting_jobs(int32_t vocab) {
  std::mt19937 rng(9);
  std::vector<TestRequest> jobs;
  for (int i = 0; i < 8; ++i) {
    TestRequest j;
    std::vector<int32_t> phrase;
    for (int t = 0; t < 6 + i; ++t) phrase.push_back(3 + static_cast<int32_t>(rng() % (vocab - 3)));
    j.prompt = {1};
    for (int rep = 0; rep < 3; ++rep) j.prompt.insert(j.prompt.end(), phrase.begin(), phrase.end());
    j.max_tokens = 24 + 4 * i;
    j.arrival_step = i % 3;
    jobs.push_back(std::move(j));
  }
  return jobs;
}

struct SpecCase {
  std::string name, path, dtype;
  // static (sinks 4 + window 32) | select (oracle rows: 24 of them, sinks 4, window 16) | dynamic | merge (dynamic
  // retention: sinks 4 + window 8 + 2 blocks by attention, evicted ones dropped or merged)
  std::string sparse = "";
  int32_t residual_tokens = 0;  // a residual window of this many tokens (int8)
  bool quotes = true;  // the random model's greedy text quotes its prompt (n-gram drafts get accepted)
};

class SpeculativeEngine : public ::testing::TestWithParam<SpecCase> {};

// Qwen3-Next's test model (recurrent states and gated full attention), written once per process.
const std::string& qwen3next_path() {
  static const std::string p = [] {
    const std::string f = ::testing::TempDir() + "/spec-qwen3next-" + std::to_string(::getpid()) + ".gguf";
    qwen3next::write_model(f, DType::F32);
    return f;
  }();
  return p;
}

TEST_P(SpeculativeEngine, GreedyTokensEqualPlainDecodingBatchedChunkedAndPreempted) {
  SpecCase sc = GetParam();
  if (sc.path.empty()) sc.path = qwen3next_path();
  SKIP_IF_MISSING(sc.path);
  auto m = load(sc.path);
  const auto jobs = quoting_jobs(static_cast<int32_t>(std::min<int64_t>(m->config.vocab_size, 512)));
  for (bool tight : {false, true}) {
    EngineConfig c = small_engine_config();
    use_cache_kind(c, sc.dtype, sc.residual_tokens, sc.sparse);
    c.sched.max_num_batched_tokens = 16;  // chunked prefill beside the verify chunks
    c.sched.max_model_len = 128;
    if (tight) {  // about two sequences' blocks: preemption
      KvLayout layout = Engine(*m, c).kv_layout();
      layout.draft_state_blocks = 8;  // a recurrent state's drafts (the most k below)
      int64_t bytes = 0;
      for (int32_t p = 0; p < layout.num_pools(); ++p) {
        bytes += (layout.blocks_for_sequence(128, 16, p) * 2 + 2) * layout.bytes_per_block(p);
      }
      c.cache.kv_cache_memory_gib = static_cast<double>(bytes) / (1 << 30);
    }
    const EngineRun plain = run_requests(*m, c, jobs);
    for (int32_t k : {2, 4, 8, -4}) {  // -4: the draft-model method, k = 4, the model its own draft
      EngineConfig s = c;
      s.speculative_config =
          k > 0 ? fmt::format(R"({{"method": "ngram", "num_speculative_tokens": {}, "adaptive": false}})", k)
                : fmt::format(R"({{"method": "draft_model", "model": "{}", "num_speculative_tokens": {}, )"
                              R"("adaptive": false}})", sc.path, -k);
      if (k < 0 && tight) {  // the draft's pool takes its share of --kv-cache-memory: the target keeps the same pool
        const double t = static_cast<double>(Engine(*m, c).kv_layout().bytes_per_token());
        const double d = static_cast<double>(model_kv_layout(*m, c.cache.block_size, {}).bytes_per_token());
        s.cache.kv_cache_memory_gib = c.cache.kv_cache_memory_gib * (t + d) / t;
      }
      const EngineRun spec = run_requests(*m, s, jobs);
      for (size_t i = 0; i < jobs.size(); ++i) {
        EXPECT_EQ(spec.tokens[i], plain.tokens[i]) << sc.name << " k " << k << (tight ? " tight" : "") << " job " << i;
      }
      const Metrics& sm = spec.metrics;
      EXPECT_GT(sm.spec_drafts, 0) << sc.name;  // every layout speculates
      EXPECT_LE(sm.spec_accepted_tokens, sm.spec_draft_tokens);
      if (k < 0 && sc.dtype == "f32" && sc.sparse.empty()) {  // the draft's own cache is full-precision and dense
        EXPECT_GE(sm.spec_accepted_tokens * 10, sm.spec_draft_tokens * 9) << sc.name << ": its own draft agrees";
      } else if (k > 0 && sc.quotes) {
        EXPECT_GT(sm.spec_accepted_tokens, 0) << sc.name << ": quoting prompts accept drafts";
      }
      if (tight && k == 4) EXPECT_GT(spec.metrics.num_preemptions, 0) << sc.name;
      if (!sc.sparse.empty() && sc.sparse != "static" && sc.sparse != "select") {
        EXPECT_GT(spec.evicted_blocks, 0) << sc.name << ": the speculating run evicts blocks";
      }
      if (k == 4 && !tight) {
        std::printf("%s: %lld verify chunks, %lld drafted, %lld accepted (%.2f), steps %lld vs %lld plain\n",
                    sc.name.c_str(), static_cast<long long>(sm.spec_drafts),
                    static_cast<long long>(sm.spec_draft_tokens), static_cast<long long>(sm.spec_accepted_tokens),
                    sm.spec_draft_tokens ? static_cast<double>(sm.spec_accepted_tokens) / sm.spec_draft_tokens : 0.0,
                    static_cast<long long>(sm.num_steps), static_cast<long long>(plain.metrics.num_steps));
      }
    }
  }
}

const std::string kSyn = models_dir() + "/synthetic/";
INSTANTIATE_TEST_SUITE_P(
    Families, SpeculativeEngine,
    ::testing::Values(SpecCase{"stories260K_f32", k260, "f32"}, SpecCase{"stories260K_int8", k260, "int8"},
                      SpecCase{"stories260K_tq4", k260, "tq4"},
                      SpecCase{"stories260K_static_window", k260, "f32", "static"},
                      SpecCase{"stories260K_tq4_residual", k260, "tq4", "", 16},
                      SpecCase{"stories260K_select", k260, "f32", "select"},
                      SpecCase{"stories260K_dynamic", k260, "f32", "dynamic"},
                      SpecCase{"stories260K_dynamic_merge", k260, "f32", "merge"},
                      SpecCase{"llama", kSyn + "llama/llama-f32.gguf", "f32"},
                      SpecCase{"llama_f16", kSyn + "llama/llama-f16.gguf", "f32"},
                      SpecCase{"llama_q8_0", kSyn + "llama/llama-q8_0.gguf", "f32"},
                      SpecCase{"llama_q4_k_m", kSyn + "llama/llama-q4_k_m.gguf", "f32"},
                      SpecCase{"qwen2", kSyn + "qwen2/qwen2-f32.gguf", "f32"},
                      SpecCase{"qwen3", kSyn + "qwen3/qwen3-f32.gguf", "f32"},
                      SpecCase{"qwen3moe", kSyn + "qwen3moe/qwen3moe-f32.gguf", "f32"},
                      SpecCase{"phi3", kSyn + "phi3/phi3-f32.gguf", "f32"},
                      SpecCase{"deepseek3_latent", kSyn + "deepseek2/deepseek2-v3-F32.gguf", "f32"},
                      SpecCase{"gemma3_windows", kSyn + "gemma3/gemma3-f32.gguf", "f32"},
                      SpecCase{"qwen3next_recurrent", "", "f32", "", 0, false},
                      SpecCase{"deepseek4_streams", kSyn + "deepseek4/deepseek4-F32.gguf", "f32"}),
    [](const auto& info) { return info.param.name; });

// Sampled requests (temperature, top-p) speculate too: each verify row is sampled by the request's own sampler, one
// draw a token, so with the same seeds speculation gives plain sampling's tokens exactly — 1,500 seeded requests of
// a quoting prompt, drafts kept and rejected; a request that opts out never drafts.
std::vector<std::vector<int32_t>> sample_runs(const Model& m, const EngineConfig& c, const std::vector<int32_t>& prompt,
                                              int n, bool speculative, Metrics* metrics,
                                              float temperature = 0.7f, int32_t max_tokens = 8,
                                              int64_t* evicted_blocks = nullptr) {
  Engine e(m, c);
  std::map<RequestId, size_t> index;
  for (int i = 0; i < n; ++i) {
    RequestParams p;
    p.ignore_eos = true;
    p.max_tokens = max_tokens;
    p.sampling.temperature = temperature;
    p.sampling.top_p = 0.95f;
    p.sampling.seed = 1000 + i;
    p.speculative = speculative;
    index[std::get<RequestId>(e.add_request(prompt, p))] = i;
  }
  std::vector<std::vector<int32_t>> out(n);
  while (e.has_unfinished()) {
    for (const auto& ev : e.step()) {
      if (ev.token >= 0) out[index[ev.id]].push_back(ev.token);
    }
  }
  EXPECT_EQ(e.kv_manager().num_used_blocks(), 0);
  *metrics = e.metrics();
  if (evicted_blocks) *evicted_blocks += e.kv_manager().num_evicted_blocks();
  return out;
}

TEST(SpeculativeSampling, SampledTokensEqualPlainSamplingsForTheSameSeeds) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  EngineConfig c = small_engine_config();
  std::vector<int32_t> prompt = {1};  // the model's own greedy text, which loops: sampled text often quotes it
  const auto greedy = run_prompts(*m, c, {prompt}, 40).tokens[0];
  prompt.insert(prompt.end(), greedy.begin(), greedy.end());
  c.sched.max_num_seqs = 64;
  EngineConfig s = c;
  s.speculative_config = R"({"method": "ngram", "num_speculative_tokens": 3, "adaptive": false})";
  constexpr int kN = 1500;
  Metrics plain_m, spec_m, off_m;
  const auto plain = sample_runs(*m, c, prompt, kN, true, &plain_m);
  const auto spec = sample_runs(*m, s, prompt, kN, true, &spec_m);
  std::printf("%lld verify chunks, %lld drafted, %lld accepted\n", static_cast<long long>(spec_m.spec_drafts),
              static_cast<long long>(spec_m.spec_draft_tokens), static_cast<long long>(spec_m.spec_accepted_tokens));
  EXPECT_GT(spec_m.spec_draft_tokens, kN) << "sampled requests draft";
  EXPECT_GT(spec_m.spec_accepted_tokens, kN / 4) << "and keep some drafts";
  EXPECT_LT(spec_m.spec_accepted_tokens, spec_m.spec_draft_tokens) << "and reject some";
  for (int i = 0; i < kN; ++i) ASSERT_EQ(spec[i], plain[i]) << "request " << i << " (seed " << 1000 + i << ")";
  sample_runs(*m, s, prompt, 64, false, &off_m);
  EXPECT_EQ(off_m.spec_drafts, 0) << "requests that opt out never draft";
}

// Caches updated as they go roll back to whichever row verification stops at — Qwen3-Next's recurrent states (the
// state after that row goes live), DeepSeek-V4's compressed streams (entries, compressor state and indexer keys
// written by position: a rejected row's are rewritten) and dynamic retention's importance (the accepted rows' only;
// evictions and merges as decode's): the model drafting for itself (greedy) while its requests
// sample at temperature 0.3 keeps some drafts and rejects others, at every position — and the tokens are plain
// sampling's, seed for seed. Prompts of 10 and 21 tokens (the second crosses entry and block boundaries).
class SpeculativeRollback : public ::testing::TestWithParam<std::string> {};

TEST_P(SpeculativeRollback, SampledSelfDraftStopsAtEveryRowAndKeepsPlainTokens) {
  const std::string kind = GetParam();
  const std::string path = kind == "qwen3next" ? qwen3next_path()
                           : kind == "deepseek4" ? kSyn + "deepseek4/deepseek4-F32.gguf"
                                                 : k260;
  SKIP_IF_MISSING(path);
  auto m = load(path);
  EngineConfig c = small_engine_config();
  c.sched.max_num_seqs = 16;
  c.sched.max_model_len = 128;
  // stories260K: sinks 4 + window 8 + 1 block of 8 by attention, evicted ones merged
  if (kind == "dynamic_merge") use_dynamic_retention(c, 20, 4, 8, true, 8);
  EngineConfig s = c;
  s.speculative_config = fmt::format(R"({{"method": "draft_model", "model": "{}", "num_speculative_tokens": 4, )"
                                     R"("adaptive": false}})", path);
  std::vector<int32_t> prompt = {1, 17, 42, 99, 5, 17, 42, 7, 300, 12};
  Metrics total{};
  int64_t evicted = 0;
  for (int round = 0; round < 2; ++round) {
    constexpr int kN = 32;
    Metrics plain_m, spec_m;
    const auto plain = sample_runs(*m, c, prompt, kN, true, &plain_m, 0.3f, 24);
    const auto spec = sample_runs(*m, s, prompt, kN, true, &spec_m, 0.3f, 24, &evicted);
    for (int i = 0; i < kN; ++i) ASSERT_EQ(spec[i], plain[i]) << "prompt " << round << " request " << i;
    total.spec_drafts += spec_m.spec_drafts;
    total.spec_draft_tokens += spec_m.spec_draft_tokens;
    total.spec_accepted_tokens += spec_m.spec_accepted_tokens;
    for (int i = 0; i < 4; ++i) total.spec_accepted_per_pos[i] += spec_m.spec_accepted_per_pos[i];
    prompt.insert(prompt.end(), prompt.begin() + 1, prompt.end());
    prompt.push_back(64);
  }
  const auto& at = total.spec_accepted_per_pos;
  std::printf("%lld verify chunks, %lld drafted, %lld accepted; kept at row 1..4: %lld %lld %lld %lld\n",
              static_cast<long long>(total.spec_drafts), static_cast<long long>(total.spec_draft_tokens),
              static_cast<long long>(total.spec_accepted_tokens), static_cast<long long>(at[0]),
              static_cast<long long>(at[1]), static_cast<long long>(at[2]), static_cast<long long>(at[3]));
  EXPECT_GT(total.spec_drafts, at[0]) << "some chunks keep no draft";
  for (int i = 0; i < 3; ++i) EXPECT_GT(at[i], at[i + 1]) << "some chunks stop after row " << i + 1;
  EXPECT_GT(at[3], 0) << "and some keep every draft";
  if (kind == "dynamic_merge") EXPECT_GT(evicted, 0) << "blocks evicted (and merged) while speculating";
}

INSTANTIATE_TEST_SUITE_P(Kinds, SpeculativeRollback, ::testing::Values("qwen3next", "deepseek4", "dynamic_merge"),
                         [](const auto& info) { return info.param; });

// One --kv-cache-memory for both pools: a draft model's pool takes the share that holds as many tokens as the
// target's — half of it when the model drafts for itself — and the target keeps the rest.
TEST(SpeculativeDraftModel, ItsPoolIsCountedInTheKvCacheMemory) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  EngineConfig c = small_engine_config();
  c.sched.max_model_len = 256;
  c.cache.kv_cache_memory_gib = 0.004;
  auto pool_bytes = [](const Engine& e) {
    return static_cast<double>(e.kv_manager().num_blocks()) * static_cast<double>(e.kv_layout().bytes_per_block());
  };
  const double budget = c.cache.kv_cache_memory_gib * (1 << 30);
  const double alone = pool_bytes(Engine(*m, c));
  c.speculative_config = fmt::format(R"({{"method": "draft_model", "model": "{}", "num_speculative_tokens": 2}})", k260);
  const double with_draft = pool_bytes(Engine(*m, c));
  const double block = static_cast<double>(Engine(*m, c).kv_layout().bytes_per_block());
  std::printf("budget %.0f bytes: the target's pool %.0f alone, %.0f beside its draft\n", budget, alone, with_draft);
  EXPECT_GT(alone, budget - block);
  EXPECT_LE(with_draft, budget / 2);
  EXPECT_GT(with_draft, budget / 2 - block);
}

// A draft model must share the target's vocabulary: refused by name otherwise.
TEST(SpeculativeDraftModel, AnotherVocabularyIsRefused) {
  SKIP_IF_MISSING(k260);
  const std::string other = models_dir() + "/synthetic/llama/llama-f32.gguf";
  SKIP_IF_MISSING(other);
  auto m = load(k260);
  EngineConfig c = small_engine_config();
  c.speculative_config = R"({"method": "draft_model", "model": ")" + other + R"(", "num_speculative_tokens": 2})";
  try {
    Engine e(*m, c);
    ADD_FAILURE() << "a draft of another vocabulary was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the draft model"), std::string::npos) << e.what();
    std::printf("refused: %s\n", e.what());
  }
}

// The adaptive switch: windows of decode steps with and without drafts are compared; the faster is kept, then
// measured again.
TEST(SpecGovernor, KeepsWhicheverMeasuredFaster) {
  for (bool spec_faster : {true, false}) {
    SpecGovernor g(4, 10);
    int spec_steps = 0;
    for (int step = 0; step < 4 + 4 + 10; ++step) {
      const bool spec = g.speculate_now();
      spec_steps += spec;
      g.record(spec == spec_faster ? 3 : 1, 1.0);  // tokens per 1 ms step
    }
    EXPECT_EQ(spec_steps, spec_faster ? 4 + 10 : 4) << "probe with, probe without, then keep the faster";
    EXPECT_EQ(g.keeping_spec(), spec_faster);
    EXPECT_TRUE(g.speculate_now()) << "measured again after the kept stretch";
  }
  // While plain decoding keeps winning, each stretch without drafts is twice the last (up to 16x); a win resets it.
  SpecGovernor g(4, 10);
  std::vector<int32_t> stretches;
  for (int round = 0; round < 7; ++round) {
    for (int step = 0; step < 8; ++step) g.record(g.speculate_now() ? 1 : 3, 1.0);  // the two probes: plain wins
    stretches.push_back(g.keep_steps());
    for (int step = 0; step < g.keep_steps(); ++step) g.record(3, 1.0);
  }
  EXPECT_EQ(stretches, (std::vector<int32_t>{10, 20, 40, 80, 160, 160, 160}));
  for (int step = 0; step < 8; ++step) g.record(g.speculate_now() ? 3 : 1, 1.0);  // drafts win
  EXPECT_TRUE(g.keeping_spec());
  EXPECT_EQ(g.keep_steps(), 10);
}

TEST(SpeculativeConfigJson, FieldsAreVllmsAndBadOnesAreRefusedByName) {
  const SpeculativeConfig c = SpeculativeConfig::from_json(
      R"({"method": "ngram", "num_speculative_tokens": 6, "prompt_lookup_min": 2, "prompt_lookup_max": 5})");
  EXPECT_TRUE(c.on());
  EXPECT_EQ(c.ngram.num_speculative_tokens, 6);
  EXPECT_EQ(c.ngram.min_n, 2);
  EXPECT_EQ(c.ngram.max_n, 5);
  EXPECT_TRUE(c.adaptive);
  EXPECT_FALSE(SpeculativeConfig::from_json(R"({"method": "ngram", "adaptive": false})").adaptive);
  EXPECT_FALSE(SpeculativeConfig::from_json("").on());
  const SpeculativeConfig d = SpeculativeConfig::from_json(R"({"model": "draft.gguf", "num_speculative_tokens": 3})");
  EXPECT_EQ(d.method, "draft_model") << "a model implies the method, as in vLLM";
  EXPECT_EQ(d.draft_model, "draft.gguf");
  for (const char* bad : {R"({"method": "eagle"})", R"({"method": "ngram", "k": 2})", R"([1])", "{",
                          R"({"num_speculative_tokens": 2})", R"({"method": "ngram", "num_speculative_tokens": 0})",
                          R"({"method": "ngram", "adaptive": 1})", R"({"method": "draft_model"})",
                          R"({"method": "ngram", "model": "x.gguf"})", R"({"model": ""})"}) {
    EXPECT_THROW(SpeculativeConfig::from_json(bad), Error) << bad;
  }
}

}  // namespace
}  // namespace slimkv::test
