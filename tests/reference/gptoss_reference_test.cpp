// gpt-oss (issue X) against llama.cpp. The model: a random-weight GGUF written at test time by tests/random_gguf.h
// (4 layers — windowed, full, windowed, full —, dim 256, 8 heads of 64 over 2 KV heads, window 128, YaRN x32, 8
// experts of 128 with top-4; F32, and a copy whose experts are MXFP4 as released files store them). The reference:
// llama.cpp's logits at every position of ../shared's p320 prompt and its 16 greedy ids, committed in
// tests/fixtures/gpt-oss/ and made by
//     SLIMKV_MAKE_FIXTURES=1 build/test_reference --gtest_filter='GptOss*'
// which writes the same GGUFs and runs ../shared/bench-ref/llama.cpp/slimkv-ref (F32 KV cache, flash attention
// off). Criteria as for the synthetic files: F32 max |Δlogit| <= 1e-3 on every path (one batch, token by token,
// chunks of 7 and of 130 that split the window), greedy ids equal while llama.cpp's margin > 0.01; MXFP4 by mean
// KL and argmax agreement. Then the engine: chunked prefill, prefix hits, batched == single, and preemption.
#include <gtest/gtest.h>

#include <cstdlib>

#include "engine_helpers.h"
#include "gptoss_model.h"
#include "reference_helpers.h"

namespace slimkv::test {
namespace {

std::string fixture_dir() { return repo_dir() + "/tests/fixtures/gpt-oss"; }
std::string prompt_path() { return synthetic_dir() + "/prompts/p320.ids"; }

// The model file for `name` (written into the test's temporary folder); with SLIMKV_MAKE_FIXTURES set, also
// llama.cpp's reference for it, written into tests/fixtures/gpt-oss/.
std::string model_for(const std::string& name, DType experts) {
  const std::string path = ::testing::TempDir() + "/" + name + "-" + std::to_string(::getpid()) + ".gguf";
  gptoss::write_model(path, experts);
  if (std::getenv("SLIMKV_MAKE_FIXTURES")) {
    const std::string ref = slimkv_ref_binary();
    EXPECT_FALSE(ref.empty()) << "slimkv-ref is needed to make fixtures";
    const std::string cmd = ref + " " + path + " " + prompt_path() + " " + fixture_dir() + "/" + name +
                            " --greedy 16 --threads 2 > " + ::testing::TempDir() + "/slimkv-ref.log 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  return path;
}

struct Reference {
  std::vector<float> logits;  // [320, 512]
  std::vector<int32_t> greedy;
  std::vector<double> margins;
};

Reference reference(const std::string& name) {
  Reference r;
  r.logits = read_f32_file(fixture_dir() + "/" + name + ".logits.f32");
  const auto g = nlohmann::json::parse(read_text_file(fixture_dir() + "/" + name + ".greedy.json"));
  r.greedy = g["ids"].get<std::vector<int32_t>>();
  r.margins = g["margins"].get<std::vector<double>>();
  return r;
}

TEST(GptOss, F32MatchesLlamaCppOnEveryPath) {
  SKIP_IF_MISSING(prompt_path());
  const std::string path = model_for("gptoss-f32", DType::F32);
  auto m = load(path);
  ASSERT_EQ(m->config.family, "gpt-oss");
  EXPECT_EQ(m->config.layers[0].sliding_window, 128);
  EXPECT_EQ(m->config.layers[1].sliding_window, 0);
  const Reference ref = reference("gptoss-f32");
  const std::vector<int32_t> ids = read_ids_file(prompt_path());
  ThreadPool pool(2);
  for (int32_t chunk : {0, 1, 7, 130}) {
    const LogitsDiff d =
        compare_logits(all_logits(*m, ids, chunk, chunk == 0 ? &pool : nullptr), ref.logits, gptoss::kVocab);
    std::printf("REF gpt-oss f32 chunk=%d: max |dlogit| %.3g, mean KL %.3g, argmax %.4f\n", chunk, d.worst(),
                d.mean_kl, d.argmax_agree);
    for (size_t p = 0; p < d.max_abs.size(); ++p) ASSERT_LE(d.max_abs[p], 1e-3) << "chunk " << chunk << " pos " << p;
  }
  const auto got = greedy(*m, ids, static_cast<int32_t>(ref.greedy.size()), &pool);
  for (size_t k = 0; k < ref.greedy.size() && ref.margins[k] > 0.01; ++k) {
    ASSERT_EQ(got[k], ref.greedy[k]) << "greedy step " << k << " (llama.cpp margin " << ref.margins[k] << ")";
  }
  std::remove(path.c_str());
}

TEST(GptOss, Mxfp4ExpertsMatchLlamaCpp) {
  SKIP_IF_MISSING(prompt_path());
  const std::string path = model_for("gptoss-mxfp4", DType::MXFP4);
  auto m = load(path);
  EXPECT_EQ(m->layers[0].exp_gate[0].dtype, DType::MXFP4);
  const Reference ref = reference("gptoss-mxfp4");
  const std::vector<int32_t> ids = read_ids_file(prompt_path());
  ThreadPool pool(2);
  for (int32_t chunk : {0, 7}) {
    const LogitsDiff d = compare_logits(all_logits(*m, ids, chunk, &pool), ref.logits, gptoss::kVocab);
    std::printf("REF gpt-oss mxfp4 chunk=%d: max |dlogit| %.3g, median %.3g, mean KL %.3g, argmax %.4f\n", chunk,
                d.worst(), d.quantile(0.5), d.mean_kl, d.argmax_agree);
    EXPECT_LE(d.mean_kl, 0.0125);  // the MXFP4_MOE synthetic files' criteria
    EXPECT_GE(d.argmax_agree, 0.9);
  }
  std::remove(path.c_str());
}

// The engine on gpt-oss: 7-token prefill chunks over 4-token blocks (windowed layers free their blocks), a second
// copy of the prompt that hits the prefix cache, llama.cpp's greedy tokens, every request alone == batched; then a
// pool too small for all three at once (preemption) gives the same tokens.
TEST(GptOss, EngineBatchedPrefixHitsAndPreemption) {
  SKIP_IF_MISSING(prompt_path());
  const std::string path = model_for("gptoss-engine", DType::F32);
  auto m = load(path);
  const Reference ref = reference("gptoss-f32");
  const std::vector<int32_t> ids = read_ids_file(prompt_path());
  EngineConfig cfg = small_engine_config();
  cfg.cache.block_size = 4;
  cfg.sched.max_num_batched_tokens = 7;
  cfg.sched.max_model_len = 512;
  const std::vector<int32_t> other(ids.begin(), ids.begin() + 40);
  const std::vector<TestRequest> reqs = {{ids, 16, 0}, {other, 16, 0}, {ids, 16, 30}};
  const EngineRun r = run_requests(*m, cfg, reqs);
  for (int which : {0, 2}) {
    for (size_t k = 0; k < ref.greedy.size() && ref.margins[k] > 0.01; ++k) {
      ASSERT_EQ(r.tokens[which][k], ref.greedy[k]) << "request " << which << " step " << k;
    }
  }
  EXPECT_GT(r.metrics.prefix_hit_tokens, 0) << "the late copy of the prompt should hit the prefix cache";
  expect_each_alone_equal(*m, cfg, reqs, r);
  EngineConfig tight = cfg;
  tight.sched.max_num_batched_tokens = 64;
  tight.sched.max_model_len = 340;
  tight.cache.kv_cache_memory_gib = 1.3e-3;  // 170 blocks: one sequence of 340 needs 134, the three ~260
  tight.cache.enable_prefix_caching = false;
  const EngineRun p = run_requests(*m, tight, {{ids, 16, 0}, {ids, 16, 0}, {other, 16, 0}});
  EXPECT_GT(p.metrics.num_preemptions, 0);
  EXPECT_EQ(p.tokens[0], r.tokens[0]);
  EXPECT_EQ(p.tokens[1], r.tokens[0]);
  EXPECT_EQ(p.tokens[2], r.tokens[1]);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace slimkv::test
