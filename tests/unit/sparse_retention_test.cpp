// Static sparse retention (sinks + recent window): the same tokens whether batched or alone and whatever the
// chunking; a long generation runs in bounded memory (evicted blocks return to the pool); windows wider than the
// context change nothing; configuration errors are clear.
#include <gtest/gtest.h>

#include <map>

#include <unistd.h>

#include "compress/calibration.h"
#include "engine/engine.h"
#include "model/kv_projection.h"
#include "engine_helpers.h"
#include "model_helpers.h"

namespace slimkv::test {
namespace {


EngineConfig sparse_cfg(int32_t sinks, int32_t window, int32_t chunk, bool caching = true) {
  EngineConfig c = small_engine_config();
  c.cache.enable_prefix_caching = caching;
  c.sched.max_num_batched_tokens = chunk;
  c.compress.kv_sparse_mode = "static";
  c.compress.kv_sink_tokens = sinks;
  c.compress.kv_recent_window = window;
  return c;
}


using RunOut = EngineRun;
EngineRun run(const Model& m, const EngineConfig& cfg, const std::vector<std::vector<int32_t>>& ps, int32_t n) {
  return run_prompts(m, cfg, ps, n);
}

std::vector<std::vector<int32_t>> prompts(int n) {
  std::vector<std::vector<int32_t>> ps;
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> p = {1};
    for (int j = 0; j < 30 + 53 * i; ++j) p.push_back(3 + (j * 17 + i * 5) % 509);
    ps.push_back(p);
  }
  return ps;
}

TEST(SparseRetention, BatchedEqualsSingleForAnyChunking) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  auto ps = prompts(6);
  auto batched = run(*m, sparse_cfg(4, 60, 64), ps, 40);
  EXPECT_GT(batched.evicted_blocks, 0);
  for (size_t i = 0; i < ps.size(); ++i) {
    EngineConfig one = sparse_cfg(4, 60, 7, /*caching=*/false);  // other chunking, alone, no prefix cache
    one.sched.max_num_seqs = 1;
    EXPECT_EQ(run(*m, one, {ps[i]}, 40).tokens[0], batched.tokens[i]) << "prompt " << i;
  }
}

TEST(SparseRetention, AllPiecesStackedKeepBatchedEqualToSingle) {
  // int8 storage + Hadamard rotation + low-rank values + static window, with prefix caching.
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  SequenceForward fwd(*m, nullptr, 512);
  KvCovariance cov(m->config.num_layers, m->config.num_kv_heads, m->config.head_dim);
  fwd.forward_pass().set_kv_observer([&](int32_t l, const float* k, const float* v, int32_t T) { cov.add(l, k, v, T); });
  auto ids = m->tokenizer->encode(read_text_file(data_dir() + "/tinystories_valid_head.txt").substr(5000, 4000), true);
  ids.resize(std::min<size_t>(ids.size(), 400));
  std::vector<float> logits(m->config.vocab_size);
  fwd.forward(ids, 0, false, logits.data());
  std::string calib = ::testing::TempDir() + "/stacked_" + std::to_string(::getpid()) + ".calib";
  Calibration::from_covariance(cov, model_fingerprint(*m)).save(calib);
  EngineConfig c = sparse_cfg(4, 48, 40);
  c.compress.kv_cache_dtype = "int8";
  c.compress.kv_compression_rank_v = 4;
  c.compress.kv_calibration = calib;
  auto ps = prompts(5);
  auto batched = run(*m, c, ps, 30);
  EXPECT_GT(batched.evicted_blocks, 0);
  for (size_t i = 0; i < ps.size(); ++i) {
    EngineConfig one = c;
    one.sched.max_num_seqs = 1;
    one.sched.max_num_batched_tokens = 13;
    EXPECT_EQ(run(*m, one, {ps[i]}, 30).tokens[0], batched.tokens[i]) << "prompt " << i;
  }
  std::remove(calib.c_str());
}

EngineConfig dynamic_cfg(int32_t sinks, int32_t window, int32_t topk, int32_t chunk, bool caching = true) {
  EngineConfig c = sparse_cfg(sinks, window, chunk, caching);
  c.compress.kv_sparse_mode = "dynamic";
  c.compress.kv_sparse_topk = topk;
  return c;
}

TEST(DynamicRetention, BatchedEqualsSingleForAnyChunkingAndMemoryStaysBounded) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  auto ps = prompts(6);
  auto batched = run(*m, dynamic_cfg(4, 24, 64, 64), ps, 60);
  EXPECT_GT(batched.evicted_blocks, 0);
  for (size_t i = 0; i < ps.size(); ++i) {
    EngineConfig one = dynamic_cfg(4, 24, 64, 7, /*caching=*/false);
    one.sched.max_num_seqs = 1;
    EXPECT_EQ(run(*m, one, {ps[i]}, 60).tokens[0], batched.tokens[i]) << "prompt " << i;
  }
  // A long generation from a short prompt: at most topk tokens of blocks (+ partial blocks) stay allocated.
  RunOut r = run(*m, dynamic_cfg(4, 24, 64, 512), {{1, 403, 407, 261, 378}}, 400);
  ASSERT_EQ(r.tokens[0].size(), 400u);
  EXPECT_LE(r.peak_blocks, 64 / 8 + 3);
}

TEST(DynamicRetention, MergingIntoSummariesKeepsBatchedEqualToSingleAndFreesEverything) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  auto ps = prompts(6);
  for (const char* dtype : {"f32", "int8"}) {
    EngineConfig c = dynamic_cfg(4, 24, 64, 64);
    c.compress.kv_evict_policy = "merge";
    c.compress.kv_cache_dtype = dtype;
    auto batched = run(*m, c, ps, 60);  // run() checks integrity every step and that every block is free at the end
    EXPECT_GT(batched.evicted_blocks, 0);
    std::vector<TestRequest> reqs;
    for (const auto& p : ps) reqs.push_back({p, 60, 0});
    expect_each_alone_equal(*m, c, reqs, batched, dtype);
    // Merged summaries change the output relative to dropping (they are attended to).
    EngineConfig drop = c;
    drop.compress.kv_evict_policy = "drop";
    EXPECT_NE(run(*m, drop, ps, 60).tokens, batched.tokens) << dtype;
  }
}

TEST(DynamicRetention, EvictingDuringPrefillBoundsThePeakWhateverTheSchedule) {
  // Long prompts, a 64-token budget, evictions every 64 prompt tokens: a sequence never holds more than the budget
  // plus one interval (+ partial blocks), where evicting after the prompt holds the whole prompt first; the
  // evictions fall at the same positions whatever the chunking, so batched == single still holds.
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  std::vector<std::vector<int32_t>> ps;
  for (int i = 0; i < 4; ++i) {
    std::vector<int32_t> p = {1};
    for (int j = 0; j < 380 + 11 * i; ++j) p.push_back(3 + (j * 31 + i * 7) % 509);
    ps.push_back(p);
  }
  for (const char* policy : {"drop", "merge"}) {
    EngineConfig c = dynamic_cfg(4, 24, 64, 128);
    c.compress.kv_evict_policy = policy;
    c.compress.kv_evict_during_prefill = 64;
    auto batched = run(*m, c, ps, 30);
    EXPECT_GT(batched.evicted_blocks, 0) << policy;
    for (size_t i = 0; i < ps.size(); ++i) {
      EngineConfig one = c;
      one.sched.max_num_seqs = 1;
      one.sched.max_num_batched_tokens = 13;  // chunks end at 13-token steps and at the eviction points
      one.cache.enable_prefix_caching = false;
      EXPECT_EQ(run(*m, one, {ps[i]}, 30).tokens[0], batched.tokens[i]) << policy << " prompt " << i;
    }
    EngineConfig single = c;
    single.sched.max_num_seqs = 1;
    const int32_t bounded = run(*m, single, {ps[3]}, 8).peak_blocks;
    EngineConfig after = single;
    after.compress.kv_evict_during_prefill = 0;
    const int32_t whole = run(*m, after, {ps[3]}, 8).peak_blocks;
    EXPECT_LE(bounded, (64 + 64) / 8 + 3) << policy;  // budget + one interval, a partial block, a summary
    EXPECT_GT(whole, 2 * bounded) << policy;          // the whole prompt first (most of its 52 blocks)
  }
}

TEST(DynamicRetention, ABudgetCoveringTheContextChangesNothing) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  auto ps = prompts(3);
  EXPECT_EQ(run(*m, dynamic_cfg(4, 16, 512, 64), ps, 20).tokens, run(*m, small_engine_config(), ps, 20).tokens);
}

TEST(SparseRetention, LongGenerationRunsInBoundedMemory) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  EngineConfig c = sparse_cfg(4, 32, 512);
  RunOut r = run(*m, c, {{1, 403, 407, 261, 378}}, 400);
  ASSERT_EQ(r.tokens[0].size(), 400u);
  // 1 sink block + ceil(32 / 8) window blocks + 1 partial: never the 51 blocks 405 tokens would take.
  EXPECT_LE(r.peak_blocks, 7);
  EXPECT_GE(r.evicted_blocks, 40);
}

TEST(SparseRetention, AWindowWiderThanTheContextChangesNothing) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  auto ps = prompts(3);
  EXPECT_EQ(run(*m, sparse_cfg(4, 512, 64), ps, 20).tokens, run(*m, small_engine_config(), ps, 20).tokens);
}

TEST(SparseRetention, ConfigurationErrorsAreClear) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  auto expect_error = [&](const EngineConfig& c, const std::string& needle) {
    expect_engine_error<Engine>(*m, c, needle);
  };
  expect_error(sparse_cfg(4, 0, 64), "--kv-recent-window");
  expect_error(sparse_cfg(-1, 16, 64), "--kv-sink-tokens");
  EngineConfig c = sparse_cfg(4, 16, 64);
  c.compress.kv_sparse_mode = "dynamic";
  c.compress.kv_sparse_topk = 12;
  expect_error(c, "--kv-sparse-topk 12 is smaller than --kv-sink-tokens 4 + --kv-recent-window 16");
  try {
    c.compress.kv_sparse_mode = "lru";
    ADD_FAILURE() << "a bad --kv-sparse-mode spelling was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--kv-sparse-mode must be one of off, static, dynamic"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace slimkv::test
