// The disk tier in the engine (issue T): a multi-turn workload over shared prefixes with a pool too small to keep
// them gives the same greedy outputs with the tier as with a pool large enough, and computes fewer prompt tokens
// (the dropped prefixes come back from disk); after a restart the same prompt is a hit with the same output; a
// corrupted or foreign tier gives misses and correct outputs, never a crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "engine/engine.h"
#include "engine_helpers.h"
#include "model_helpers.h"

namespace slimkv::test {
namespace {

namespace fs = std::filesystem;

std::string fresh_dir(const std::string& tag) {
  const std::string d = ::testing::TempDir() + "/kv-offload-" + tag + "-" + std::to_string(::getpid());
  fs::remove_all(d);
  return d;
}

// 4 shared 97-token prefixes, 12 turns cycling over them, each with its own 5-token question.
std::vector<std::vector<int32_t>> turns() {
  std::mt19937 rng(3);
  std::vector<std::vector<int32_t>> prefixes(4), out;
  for (auto& p : prefixes) {
    p = {1};
    for (int t = 0; t < 96; ++t) p.push_back(3 + static_cast<int32_t>(rng() % 509));
  }
  for (int i = 0; i < 12; ++i) {
    std::vector<int32_t> p = prefixes[i % 4];
    for (int t = 0; t < 5; ++t) p.push_back(3 + static_cast<int32_t>(rng() % 509));
    out.push_back(std::move(p));
  }
  return out;
}

EngineConfig config(int32_t pool_blocks, const std::string& dir) {
  EngineConfig c = small_engine_config();
  c.cache.block_size = 16;
  c.sched.max_model_len = 128;
  c.cache.kv_cache_memory_gib = pool_blocks * 16.0 * 1280 / (1ull << 30);  // stories260K: 1280 bytes per token
  c.cache.kv_offload_dir = dir;
  return c;
}

TEST(KvOffload, ASmallPoolWithTheTierEqualsALargePoolAndComputesLess) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  const auto prompts = turns();
  Engine large(*m, config(64, ""));  // all four prefixes fit
  const TurnsRun want = run_turns(large, prompts, 8);
  Engine small(*m, config(10, ""));  // one prefix (7 blocks) and a turn's tail
  const TurnsRun without = run_turns(small, prompts, 8);
  Engine tiered(*m, config(10, fresh_dir("small")));
  const TurnsRun with = run_turns(tiered, prompts, 8);
  EXPECT_EQ(without.tokens, want.tokens);
  EXPECT_EQ(with.tokens, want.tokens) << "restored blocks give the same outputs as computed ones";
  EXPECT_GT(with.offload.offered_blocks, 0);
  EXPECT_GT(with.offload.restored_blocks, 0);
  EXPECT_GT(with.hit_tokens, without.hit_tokens) << "prompt tokens computed drop with the tier";
  EXPECT_EQ(with.offload.tier.corrupt, 0);
  std::printf("prefix-hit tokens: large pool %lld, small pool %lld, small pool + tier %lld (%lld blocks restored)\n",
              static_cast<long long>(want.hit_tokens), static_cast<long long>(without.hit_tokens),
              static_cast<long long>(with.hit_tokens), static_cast<long long>(with.offload.restored_blocks));
}

TEST(KvOffload, ARestartFindsTheSavedPrefixAndCorruptOrForeignFilesAreMisses) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  const auto prompts = turns();
  const std::vector<std::vector<int32_t>> first(prompts.begin(), prompts.begin() + 1);
  const std::string dir = fresh_dir("restart");
  TurnsRun before;
  {
    Engine e(*m, config(64, dir));
    before = run_turns(e, first, 8);
  }  // the pool's cached blocks are saved at the end
  {
    Engine e(*m, config(64, dir));
    const TurnsRun after = run_turns(e, first, 8);
    EXPECT_EQ(after.tokens, before.tokens);
    EXPECT_EQ(after.hit_tokens, 96) << "the whole prefix but the last block's rest came from disk";
    EXPECT_EQ(after.offload.restored_blocks, 6);
  }
  for (const auto& f : fs::directory_iterator(dir)) {  // damage every record's payload
    std::fstream s(f.path(), std::ios::in | std::ios::out | std::ios::binary);
    for (int64_t at = 32 + 32 + 200; at < static_cast<int64_t>(fs::file_size(f.path())); at += 4096) {
      s.seekp(at);
      s.put('\x33');
    }
  }
  {
    Engine e(*m, config(64, dir));
    const TurnsRun damaged = run_turns(e, first, 8);
    EXPECT_EQ(damaged.tokens, before.tokens);
    EXPECT_EQ(damaged.hit_tokens, 0);
    EXPECT_GT(damaged.offload.tier.corrupt, 0);
  }
  EngineConfig other = config(64, dir);
  other.sched.max_model_len = 96 + 32;  // the same layout: still this tier
  other.cache.block_size = 8;           // another block size: another fingerprint
  Engine e(*m, other);
  const TurnsRun foreign = run_turns(e, first, 8);
  EXPECT_EQ(foreign.tokens, before.tokens);
  EXPECT_EQ(foreign.offload.restored_blocks, 0);
  EXPECT_GT(foreign.offload.tier.ignored_files, 0);
}

TEST(KvOffload, ALayoutItCannotKeepIsRefusedWithTheReason) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  EngineConfig c = config(64, fresh_dir("refused"));
  c.cache.enable_prefix_caching = false;
  try {
    Engine e(*m, c);
    ADD_FAILURE() << "accepted a tier without the prefix cache";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("--enable-prefix-caching"), std::string::npos) << err.what();
  }
}

// What rank 0's tier did, for the other ranks of a tensor-parallel job: back as it went, and bytes that are not
// ops are refused (a short message, lengths past the end, tokens that are not a whole block per op).
TEST(KvTierOps, RoundTripAndBadBytesAreRefused) {
  KvTierOps ops;
  for (int i = 0; i < 3; ++i) {
    KvTierOp op;
    op.restore = i == 1;
    op.pool = i;
    op.block = 10 + i;
    op.key = 0x1234567890abcdefull * (i + 1);
    ops.ops.push_back(op);
    for (int t = 0; t < 4; ++t) ops.tokens.push_back(100 * i + t);
  }
  ops.wait = 1;
  std::vector<uint8_t> bytes;
  encode_kv_tier_ops(ops, bytes);
  const KvTierOps back = decode_kv_tier_ops(bytes);
  ASSERT_EQ(back.ops.size(), 3u);
  EXPECT_EQ(back.num_restores(), 1);
  EXPECT_EQ(back.tokens, ops.tokens);
  EXPECT_EQ(back.wait, 1);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back.ops[i].key, ops.ops[i].key);
    EXPECT_EQ(back.ops[i].block, ops.ops[i].block);
    EXPECT_EQ(back.ops[i].pool, ops.ops[i].pool);
  }
  for (size_t cut : {size_t{0}, size_t{5}, bytes.size() - 1}) {
    EXPECT_THROW(decode_kv_tier_ops(std::span<const uint8_t>(bytes.data(), cut)), Error) << cut;
  }
  std::vector<uint8_t> odd = bytes;
  odd[8] = 11;  // 11 tokens for 3 blocks
  EXPECT_THROW(decode_kv_tier_ops(odd), Error);
}

}  // namespace
}  // namespace slimkv::test
