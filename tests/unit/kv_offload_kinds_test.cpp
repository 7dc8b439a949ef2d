// The disk tier on every KV kind (issue T): sliding windows (Gemma 3's, static retention's sinks + window), a tq4
// cache with its residual window, MLA's latent records (DeepSeek-V3), DeepSeek-V4's raw window, compressed entries
// and indexer keys in pools of their own, and Qwen3-Next's recurrent state (its prompt-boundary snapshots). For
// each: the multi-turn workload over shared prefixes with a pool too small to keep them gives, with the tier, the
// greedy outputs of a pool large enough and more prefix-hit tokens (each kind's own rule decides what a hit reads
// and so what comes back); after a restart the first prompt hits what was saved, with the same output.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "engine/engine.h"
#include "engine_helpers.h"
#include "model_helpers.h"
#include "qwen3next_model.h"

namespace slimkv::test {
namespace {

namespace fs = std::filesystem;

struct Kind {
  std::string name;
  std::string path;  // empty: qwen3next, written here
  std::string dtype = "f32";
  std::string sparse;  // "" or "static"
  int32_t residual_tokens = 0;
};

Kind kind(std::string name, std::string path, std::string dtype = "f32", std::string sparse = "", int32_t residual = 0) {
  return Kind{std::move(name), std::move(path), std::move(dtype), std::move(sparse), residual};
}

std::string kind_model(const Kind& k) {
  if (!k.path.empty()) return k.path;
  static const std::string p = [] {
    const std::string f = ::testing::TempDir() + "/kv-offload-qwen3next-" + std::to_string(::getpid()) + ".gguf";
    qwen3next::write_model(f, DType::F32);
    return f;
  }();
  return p;
}

// 4 shared 96-token prefixes (BOS + 95), 12 turns cycling over them, each with its own 6-token question.
std::vector<std::vector<int32_t>> kind_turns() {
  std::mt19937 rng(5);
  std::vector<std::vector<int32_t>> prefixes(4), out;
  for (auto& p : prefixes) {
    p = {1};
    for (int t = 0; t < 95; ++t) p.push_back(3 + static_cast<int32_t>(rng() % 500));
  }
  for (int i = 0; i < 12; ++i) {
    std::vector<int32_t> p = prefixes[i % 4];
    for (int t = 0; t < 6; ++t) p.push_back(3 + static_cast<int32_t>(rng() % 500));
    out.push_back(std::move(p));
  }
  return out;
}

EngineConfig kind_config(const Kind& k, const std::string& dir) {
  EngineConfig c = small_engine_config();
  c.cache.block_size = 8;
  c.sched.max_model_len = 128;
  c.sched.max_num_batched_tokens = 32;
  c.compress.kv_cache_dtype = k.dtype;
  if (!k.sparse.empty()) {
    c.compress.kv_sparse_mode = k.sparse;
    c.compress.kv_sink_tokens = 4;
    c.compress.kv_recent_window = 32;
  }
  c.compress.kv_residual_tokens = k.residual_tokens;
  c.cache.kv_offload_dir = dir;
  return c;
}

// A budget of one longest sequence per pool plus `slack_seqs` more (0: a pool that keeps no second prefix).
double budget_gib(const KvLayout& layout, int32_t chunk, int32_t slack_seqs) {
  int64_t bytes = 0;
  for (int32_t p = 0; p < layout.num_pools(); ++p) {
    bytes += (layout.blocks_for_sequence(128, chunk, p) * (1 + slack_seqs) + 2) * layout.bytes_per_block(p);
  }
  return static_cast<double>(bytes) / (1 << 30);
}

TurnsRun run_kind(const Model& m, const EngineConfig& c, const std::vector<std::vector<int32_t>>& prompts) {
  Engine e(m, c);
  return run_turns(e, prompts, 6);
}

class KvOffloadKinds : public ::testing::TestWithParam<Kind> {};

TEST_P(KvOffloadKinds, TheTierGivesALargePoolsOutputsAndHitsAfterARestart) {
  const Kind k = GetParam();
  const std::string path = kind_model(k);
  SKIP_IF_MISSING(path);
  auto m = load(path);
  const auto prompts = kind_turns();
  EngineConfig probe = kind_config(k, "");
  probe.cache.kv_cache_memory_gib = 0.05;
  const KvLayout layout = Engine(*m, probe).kv_layout();
  const std::string dir = ::testing::TempDir() + "/kv-offload-kind-" + k.name + "-" + std::to_string(::getpid());
  fs::remove_all(dir);

  EngineConfig large = kind_config(k, ""), small = kind_config(k, ""), tiered = kind_config(k, dir);
  large.cache.kv_cache_memory_gib = budget_gib(layout, 32, 8);
  small.cache.kv_cache_memory_gib = tiered.cache.kv_cache_memory_gib = budget_gib(layout, 32, 0);
  const TurnsRun want = run_kind(*m, large, prompts);
  const TurnsRun without = run_kind(*m, small, prompts);
  const TurnsRun with = run_kind(*m, tiered, prompts);
  EXPECT_GT(want.hit_tokens, without.hit_tokens) << "the small pool must lose prefixes for the test to mean much";
  EXPECT_EQ(without.tokens, want.tokens);
  EXPECT_EQ(with.tokens, want.tokens) << "restored blocks give the same outputs as computed ones";
  EXPECT_GT(with.offload.restored_blocks, 0);
  EXPECT_GT(with.hit_tokens, without.hit_tokens) << "prompt tokens computed drop with the tier";
  EXPECT_EQ(with.offload.tier.corrupt, 0);
  // A restart: the first prompt alone, on a fresh engine over the same directory (its pool saved at the end).
  const std::vector<std::vector<int32_t>> first(prompts.begin(), prompts.begin() + 1);
  const TurnsRun again = run_kind(*m, tiered, first);
  EXPECT_EQ(again.tokens[0], want.tokens[0]);
  EXPECT_GT(again.hit_tokens, 0) << "the saved prefix is a hit after a restart";
  EXPECT_GT(again.offload.restored_blocks, 0);
  std::printf("%s: hit tokens large %lld, small %lld, small + tier %lld (%lld blocks restored); restart %lld\n",
              k.name.c_str(), static_cast<long long>(want.hit_tokens), static_cast<long long>(without.hit_tokens),
              static_cast<long long>(with.hit_tokens), static_cast<long long>(with.offload.restored_blocks),
              static_cast<long long>(again.hit_tokens));
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    EveryKind, KvOffloadKinds,
    ::testing::Values(kind("gemma3_windows", models_dir() + "/synthetic/gemma3/gemma3-f32.gguf"),
                      kind("static_sinks_window", k260, "f16", "static"), kind("tq4_residual", k260, "tq4", "", 16),
                      kind("deepseek3_latent", models_dir() + "/synthetic/deepseek2/deepseek2-v3-F32.gguf"),
                      kind("deepseek4_streams", models_dir() + "/synthetic/deepseek4/deepseek4-F32.gguf"),
                      kind("qwen3next_recurrent", "")),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace slimkv::test
