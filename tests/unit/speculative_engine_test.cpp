// Speculative decoding in the engine (issue SD, n-gram, greedy): the same requests with --speculative-config give
// byte-identical greedy tokens to plain decoding, batched, with chunked prefill and under preemption, on every
// family's synthetic file whose cache rolls back (full attention: Llama, Qwen2/3, Qwen3-MoE, Phi-3, DeepSeek-V3's
// latent cache, stories260K with int8 and tq4 pages) — with drafts accepted; layouts that do not (windows,
// recurrent state, DeepSeek-V4's streams) decode plainly and still give the same tokens.
#include <gtest/gtest.h>

#include <random>

#include "engine_helpers.h"
#include "model_helpers.h"

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
  bool rolls_back;
};

class SpeculativeEngine : public ::testing::TestWithParam<SpecCase> {};

TEST_P(SpeculativeEngine, GreedyTokensEqualPlainDecodingBatchedChunkedAndPreempted) {
  const SpecCase sc = GetParam();
  SKIP_IF_MISSING(sc.path);
  auto m = load(sc.path);
  const auto jobs = quoting_jobs(static_cast<int32_t>(std::min<int64_t>(m->config.vocab_size, 512)));
  for (bool tight : {false, true}) {
    EngineConfig c = small_engine_config();
    c.compress.kv_cache_dtype = sc.dtype;
    c.sched.max_num_batched_tokens = 16;  // chunked prefill beside the verify chunks
    c.sched.max_model_len = 128;
    if (tight) {  // about two sequences' blocks: preemption
      const KvLayout layout = Engine(*m, c).kv_layout();
      int64_t bytes = 0;
      for (int32_t p = 0; p < layout.num_pools(); ++p) {
        bytes += (layout.blocks_for_sequence(128, 16, p) * 2 + 2) * layout.bytes_per_block(p);
      }
      c.cache.kv_cache_memory_gib = static_cast<double>(bytes) / (1 << 30);
    }
    const EngineRun plain = run_requests(*m, c, jobs);
    for (int32_t k : {2, 4, 8}) {
      EngineConfig s = c;
      s.speculative_config = fmt::format(R"({{"method": "ngram", "num_speculative_tokens": {}, "adaptive": false}})", k);
      const EngineRun spec = run_requests(*m, s, jobs);
      for (size_t i = 0; i < jobs.size(); ++i) {
        EXPECT_EQ(spec.tokens[i], plain.tokens[i]) << sc.name << " k " << k << (tight ? " tight" : "") << " job " << i;
      }
      const Metrics& sm = spec.metrics;
      if (sc.rolls_back) {
        EXPECT_GT(sm.spec_drafts, 0) << sc.name;
        EXPECT_GT(sm.spec_accepted_tokens, 0) << sc.name << ": quoting prompts accept drafts";
        EXPECT_LE(sm.spec_accepted_tokens, sm.spec_draft_tokens);
      } else {
        EXPECT_EQ(sm.spec_drafts, 0) << sc.name << ": this layout decodes without drafts";
      }
      if (tight && k == 4) EXPECT_GT(spec.metrics.num_preemptions, 0) << sc.name;
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
    ::testing::Values(SpecCase{"stories260K_f32", k260, "f32", true}, SpecCase{"stories260K_int8", k260, "int8", true},
                      SpecCase{"stories260K_tq4", k260, "tq4", true},
                      SpecCase{"llama", kSyn + "llama/llama-f32.gguf", "f32", true},
                      SpecCase{"llama_f16", kSyn + "llama/llama-f16.gguf", "f32", true},
                      SpecCase{"llama_q8_0", kSyn + "llama/llama-q8_0.gguf", "f32", true},
                      SpecCase{"llama_q4_k_m", kSyn + "llama/llama-q4_k_m.gguf", "f32", true},
                      SpecCase{"qwen2", kSyn + "qwen2/qwen2-f32.gguf", "f32", true},
                      SpecCase{"qwen3", kSyn + "qwen3/qwen3-f32.gguf", "f32", true},
                      SpecCase{"qwen3moe", kSyn + "qwen3moe/qwen3moe-f32.gguf", "f32", true},
                      SpecCase{"phi3", kSyn + "phi3/phi3-f32.gguf", "f32", true},
                      SpecCase{"deepseek3_latent", kSyn + "deepseek2/deepseek2-v3-F32.gguf", "f32", true},
                      SpecCase{"gemma3_windows", kSyn + "gemma3/gemma3-f32.gguf", "f32", false},
                      SpecCase{"deepseek4_streams", kSyn + "deepseek4/deepseek4-F32.gguf", "f32", false}),
    [](const auto& info) { return info.param.name; });

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
  for (const char* bad : {R"({"method": "eagle"})", R"({"method": "ngram", "k": 2})", R"([1])", "{",
                          R"({"num_speculative_tokens": 2})", R"({"method": "ngram", "num_speculative_tokens": 0})",
                          R"({"method": "ngram", "adaptive": 1})"}) {
    EXPECT_THROW(SpeculativeConfig::from_json(bad), Error) << bad;
  }
}

}  // namespace
}  // namespace slimkv::test
