// Qwen3-Next (issue X) against llama.cpp. The model: a random-weight GGUF written at test time by tests/random_gguf.h
// (4 layers — Gated DeltaNet x3, then gated full attention —, dim 256, 2 key / 4 value DeltaNet heads of 32 with a
// 4-tap convolution, 4 attention heads of 64 over 2 KV heads, 8 experts of 64 with top-2 and a gated shared
// expert; F32, and a copy whose matrices are Q8_0). The reference: llama.cpp's logits at every position of
// ../shared's p320 prompt and its 16 greedy ids, committed in tests/fixtures/qwen3next/ and made by
//     SLIMKV_MAKE_FIXTURES=1 build/test_reference --gtest_filter='Qwen3Next*'
// which writes the same GGUFs and runs ../shared/bench-ref/llama.cpp/slimkv-ref (F32 caches, flash attention off).
// Criteria as for the synthetic files: F32 max |Δlogit| <= 1e-3 on every path (one batch, token by token, chunks of
// 7 and of 130: each chunk resumes the recurrent state and the convolution's last inputs from the cache), greedy ids
// equal while llama.cpp's margin > 0.01; Q8_0 by mean KL and argmax agreement. Then the engine: the recurrent-state
// KV kind with chunked prefill, a prefix hit at the prompt boundary (the state's snapshot), batched == single, and
// preemption (the state recomputed).
#include <gtest/gtest.h>

#include <cstdlib>

#include "engine_helpers.h"
#include "model/decoder_forward.h"
#include "qwen3next_model.h"
#include "reference_helpers.h"

namespace slimkv::test {
namespace {

std::string q3n_fixture_dir() { return repo_dir() + "/tests/fixtures/qwen3next"; }
std::string q3n_prompt_path() { return synthetic_dir() + "/prompts/p320.ids"; }

// The model file for `name` (in the test's temporary folder); with SLIMKV_MAKE_FIXTURES set, also llama.cpp's
// reference for it, written into tests/fixtures/qwen3next/.
std::string q3n_model_for(const std::string& name, DType matrices) {
  const std::string path = ::testing::TempDir() + "/" + name + "-" + std::to_string(::getpid()) + ".gguf";
  qwen3next::write_model(path, matrices);
  if (std::getenv("SLIMKV_MAKE_FIXTURES")) {
    const std::string ref = slimkv_ref_binary();
    EXPECT_FALSE(ref.empty()) << "slimkv-ref is needed to make fixtures";
    const std::string cmd = ref + " " + path + " " + q3n_prompt_path() + " " + q3n_fixture_dir() + "/" + name +
                            " --greedy 16 --threads 2 > " + ::testing::TempDir() + "/slimkv-ref.log 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  return path;
}

struct Q3nReference {
  std::vector<float> logits;  // [320, 512]
  std::vector<int32_t> greedy;
  std::vector<double> margins;
};

Q3nReference q3n_reference(const std::string& name) {
  Q3nReference r;
  r.logits = read_f32_file(q3n_fixture_dir() + "/" + name + ".logits.f32");
  const auto g = nlohmann::json::parse(read_text_file(q3n_fixture_dir() + "/" + name + ".greedy.json"));
  r.greedy = g["ids"].get<std::vector<int32_t>>();
  r.margins = g["margins"].get<std::vector<double>>();
  return r;
}

TEST(Qwen3Next, F32MatchesLlamaCppOnEveryPath) {
  SKIP_IF_MISSING(q3n_prompt_path());
  const std::string path = q3n_model_for("qwen3next-f32", DType::F32);
  auto m = load(path);
  ASSERT_EQ(m->config.family, "qwen3next");
  EXPECT_TRUE(m->config.layers[0].delta_net);
  EXPECT_FALSE(m->config.layers[3].delta_net);
  EXPECT_TRUE(m->config.layers[3].attn_output_gate);
  const Q3nReference ref = q3n_reference("qwen3next-f32");
  const std::vector<int32_t> ids = read_ids_file(q3n_prompt_path());
  ThreadPool pool(2);
  for (int32_t chunk : {0, 1, 7, 130}) {
    const LogitsDiff d =
        compare_logits(all_logits(*m, ids, chunk, chunk == 0 ? &pool : nullptr), ref.logits, qwen3next::kVocab);
    std::printf("REF qwen3next f32 chunk=%d: max |dlogit| %.3g, mean KL %.3g, argmax %.4f\n", chunk, d.worst(),
                d.mean_kl, d.argmax_agree);
    for (size_t p = 0; p < d.max_abs.size(); ++p) ASSERT_LE(d.max_abs[p], 1e-3) << "chunk " << chunk << " pos " << p;
  }
  const auto got = greedy(*m, ids, static_cast<int32_t>(ref.greedy.size()), &pool);
  for (size_t k = 0; k < ref.greedy.size() && ref.margins[k] > 0.01; ++k) {
    ASSERT_EQ(got[k], ref.greedy[k]) << "greedy step " << k << " (llama.cpp margin " << ref.margins[k] << ")";
  }
  std::remove(path.c_str());
}

// A file with an MTP head after the trunk (block_count 5, nextn_predict_layers 1, as the converter writes released
// models): the trunk alone runs, with the logits of the file without it.
TEST(Qwen3Next, AnMtpHeadAfterTheTrunkIsNotRun) {
  SKIP_IF_MISSING(q3n_prompt_path());
  const std::string path = ::testing::TempDir() + "/qwen3next-mtp-" + std::to_string(::getpid()) + ".gguf";
  qwen3next::write_model(path, DType::F32, 1);
  auto m = load(path);
  EXPECT_EQ(m->config.num_layers, 4);
  const Q3nReference ref = q3n_reference("qwen3next-f32");
  const std::vector<int32_t> ids = read_ids_file(q3n_prompt_path());
  const LogitsDiff d = compare_logits(all_logits(*m, ids, 0, nullptr), ref.logits, qwen3next::kVocab);
  EXPECT_LE(d.worst(), 1e-3);
  std::remove(path.c_str());
}

TEST(Qwen3Next, Q8MatricesMatchLlamaCpp) {
  SKIP_IF_MISSING(q3n_prompt_path());
  const std::string path = q3n_model_for("qwen3next-q8_0", DType::Q8_0);
  auto m = load(path);
  EXPECT_EQ(m->layers[0].ssm_qkv.dtype, DType::Q8_0);
  const Q3nReference ref = q3n_reference("qwen3next-q8_0");
  const std::vector<int32_t> ids = read_ids_file(q3n_prompt_path());
  ThreadPool pool(2);
  for (int32_t chunk : {0, 7}) {
    const LogitsDiff d = compare_logits(all_logits(*m, ids, chunk, &pool), ref.logits, qwen3next::kVocab);
    std::printf("REF qwen3next q8_0 chunk=%d: max |dlogit| %.3g, median %.3g, mean KL %.3g, argmax %.4f\n", chunk,
                d.worst(), d.quantile(0.5), d.mean_kl, d.argmax_agree);
    EXPECT_LE(d.mean_kl, 0.0125);  // the quantized synthetic files' criteria
    EXPECT_GE(d.argmax_agree, 0.9);
  }
  std::remove(path.c_str());
}

// The engine on Qwen3-Next: 7-token prefill chunks over 4-token blocks (each chunk reads and rewrites the
// sequences' recurrent states), a second copy of the prompt arriving after the first's prompt is done (it resumes
// from the state snapshot at the prompt boundary: 316 tokens), llama.cpp's greedy tokens, every request alone ==
// batched; then a pool too small for all three at once (preemption: the state recomputed) gives the same tokens.
TEST(Qwen3Next, EngineBatchedPrefixHitsAndPreemption) {
  SKIP_IF_MISSING(q3n_prompt_path());
  const std::string path = q3n_model_for("qwen3next-engine", DType::F32);
  auto m = load(path);
  const Q3nReference ref = q3n_reference("qwen3next-f32");
  const std::vector<int32_t> ids = read_ids_file(q3n_prompt_path());
  EngineConfig cfg = small_engine_config();
  cfg.cache.block_size = 4;
  cfg.sched.max_num_batched_tokens = 7;
  cfg.sched.max_model_len = 512;
  const std::vector<int32_t> other(ids.begin(), ids.begin() + 40);
  const std::vector<TestRequest> reqs = {{ids, 16, 0}, {other, 16, 0}, {ids, 16, 70}};
  const EngineRun r = run_requests(*m, cfg, reqs);
  for (int which : {0, 2}) {
    for (size_t k = 0; k < ref.greedy.size() && ref.margins[k] > 0.01; ++k) {
      ASSERT_EQ(r.tokens[which][k], ref.greedy[k]) << "request " << which << " step " << k;
    }
  }
  EXPECT_EQ(r.metrics.prefix_hit_tokens, 316) << "the late copy should resume from the prompt-boundary snapshot";
  expect_each_alone_equal(*m, cfg, reqs, r);
  EngineConfig tight = cfg;
  tight.sched.max_num_batched_tokens = 64;
  tight.sched.max_model_len = 340;
  tight.cache.kv_cache_memory_gib = 0.8e-3;  // states take up to half: < 2 sequences of 340 for the 182 blocks
  tight.cache.enable_prefix_caching = false;
  const EngineRun p = run_requests(*m, tight, {{ids, 16, 0}, {ids, 16, 0}, {other, 16, 0}});
  EXPECT_GT(p.metrics.num_preemptions, 0);
  EXPECT_EQ(p.tokens[0], r.tokens[0]);
  EXPECT_EQ(p.tokens[1], r.tokens[0]);
  EXPECT_EQ(p.tokens[2], r.tokens[1]);
  std::remove(path.c_str());
}

// Post-hoc compression composes with the recurrent state: under int8 with dynamic top-K retention and merge, the
// attention layer's records become int8 in a retention group while the DeltaNet states stay exact F32 recurrent
// blocks; batched == single, and low rank (whose calibration covers attention layers only) is refused by name.
TEST(Qwen3Next, CompressionTransformsOnlyTheAttentionLayer) {
  SKIP_IF_MISSING(q3n_prompt_path());
  const std::string path = q3n_model_for("qwen3next-compress", DType::F32);
  auto m = load(path);
  EngineConfig c = small_engine_config();
  c.sched.max_model_len = 512;
  c.cache.block_size = 4;
  c.compress.kv_cache_dtype = "int8";
  c.compress.kv_sparse_mode = "dynamic";
  c.compress.kv_sparse_topk = 48;
  c.compress.kv_sink_tokens = 4;
  c.compress.kv_recent_window = 16;
  c.compress.kv_evict_policy = "merge";
  const KvLayout layout = DecoderForward(*m, nullptr).kv_layout(4, c.compress);
  ASSERT_EQ(layout.num_layers(), 4);
  for (int32_t l = 0; l < 3; ++l) {
    EXPECT_EQ(layout.layers[l].dtype, KvDtype::F32);
    EXPECT_EQ(layout.layers[l].spec.kind, KvGroupKind::Recurrent);
  }
  EXPECT_EQ(layout.layers[3].dtype, KvDtype::Int8);
  EXPECT_EQ(layout.layers[3].spec.kind, KvGroupKind::DynamicTopK);
  const std::vector<int32_t> ids = read_ids_file(q3n_prompt_path());
  const std::vector<TestRequest> reqs = {{std::vector<int32_t>(ids.begin(), ids.begin() + 120), 24, 0},
                                         {std::vector<int32_t>(ids.begin() + 100, ids.end()), 24, 0}};
  const EngineRun batched = run_requests(*m, c, reqs);
  EXPECT_GT(batched.evicted_blocks, 0);
  expect_each_alone_equal(*m, c, reqs, batched, "int8 + dynamic");
  CompressionConfig lr;
  lr.enabled = true;
  lr.kv_compression_rank = 32;
  lr.kv_calibration = "unused.json";
  EXPECT_THROW(DecoderForward(*m, nullptr).kv_layout(4, lr), Error);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace slimkv::test
