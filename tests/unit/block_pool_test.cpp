// BlockPool and KvCacheManager: exact block ids, reference counts, LRU reuse, prefix hits; integrity after every op.
#include <gtest/gtest.h>

#include <random>

#include "core/check.h"
#include "kv/kv_cache_config.h"
#include "kv/kv_cache_manager.h"

namespace slimkv {
namespace {

TEST(BlockPool, AllocateIsAllOrNothingAndReleaseReturnsBlocksInLruOrder) {
  BlockPool pool(5, true);
  auto a = pool.allocate(4);
  ASSERT_TRUE(a);
  EXPECT_EQ(*a, (std::vector<BlockId>{0, 1, 2, 3}));
  EXPECT_FALSE(pool.allocate(2));  // only 1 free: nothing taken
  EXPECT_EQ(pool.num_free_blocks(), 1);
  pool.check_integrity();
  const std::vector<int32_t> toks = {1, 2};
  pool.register_hash(1, 11, toks);
  pool.register_hash(3, 33, toks);
  std::vector<BlockId> rel = {3, 2, 1, 0};
  pool.release(rel);
  pool.check_integrity();
  // Blocks without a hash are reused first, the last freed first (they are resident, and hold nothing worth
  // keeping: issue R defect 9); then the never-touched block 4; cached blocks last, least recently freed first.
  auto b = pool.allocate(5);
  ASSERT_TRUE(b);
  EXPECT_EQ(*b, (std::vector<BlockId>{0, 2, 4, 3, 1}));
  pool.check_integrity();
}

// Issue R defect 9: without --kv-cache-memory the pool is no larger than --max-num-seqs full sequences need (the
// utilization share of RAM is a ceiling); an explicit budget is taken as given.
TEST(KvCacheConfig, DefaultPoolIsCappedByTheSequencesItCanServe) {
  const KvLayout layout = KvLayout::uniform(2, 2, 16, 8);  // 2 layers, 2 KV heads of 16: 512 f32 bytes per token
  KvCacheConfig c;
  const int32_t per_seq = static_cast<int32_t>(layout.blocks_for_sequence(512, 512));
  EXPECT_EQ(c.num_blocks(layout, 512, 512, 4), 4 * per_seq);
  EXPECT_GT(c.num_blocks(layout, 512, 512, 0), 4 * per_seq);  // no cap asked: the utilization budget
  c.kv_cache_memory_gib = 1.0;
  EXPECT_EQ(c.num_blocks(layout, 512, 512, 4), (int64_t{1} << 30) / layout.bytes_per_block());
}

TEST(BlockPool, DoubleFreeIsAnError) {
  BlockPool pool(2, false);
  auto a = pool.allocate(1);
  pool.release(*a);
  EXPECT_THROW(pool.release(*a), Error);
}

TEST(BlockPool, CachedBlockStaysFindableUntilReusedAndHitsVerifyTokens) {
  BlockPool pool(2, true);
  auto a = pool.allocate(1);
  std::vector<int32_t> toks = {5, 6, 7, 8};
  pool.register_hash((*a)[0], 42, toks);
  pool.release(*a);
  EXPECT_EQ(pool.lookup(42, toks), (*a)[0]);
  std::vector<int32_t> other = {5, 6, 7, 9};
  EXPECT_FALSE(pool.lookup(42, other));  // same hash, different tokens: no false hit
  pool.retain((*a)[0]);                  // a hit takes it out of the free queue
  EXPECT_EQ(pool.num_free_blocks(), 1);
  pool.check_integrity();
  std::vector<BlockId> one = {(*a)[0]};
  pool.release(one);
  auto b = pool.allocate(2);  // reuses it: the hash is dropped
  EXPECT_FALSE(pool.lookup(42, toks));
  pool.check_integrity();
}

TEST(BlockPool, RandomOperationsKeepInvariants) {
  BlockPool pool(32, true);
  std::mt19937 rng(3);
  std::vector<BlockId> held;
  for (int i = 0; i < 2000; ++i) {
    int op = rng() % 4;
    if (op == 0) {
      if (auto a = pool.allocate(1 + rng() % 4)) held.insert(held.end(), a->begin(), a->end());
    } else if (op == 1 && !held.empty()) {
      size_t k = rng() % held.size();
      std::vector<BlockId> r = {held[k]};
      held.erase(held.begin() + k);
      pool.release(r);
    } else if (op == 2 && !held.empty()) {
      BlockId id = held[rng() % held.size()];
      std::vector<int32_t> t = {static_cast<int32_t>(id)};
      pool.register_hash(id, 1000 + id, t);
    } else if (op == 3 && !held.empty()) {
      BlockId id = held[rng() % held.size()];
      pool.retain(id);
      held.push_back(id);
    }
    pool.check_integrity();
  }
  pool.release(held);
  pool.check_integrity();
  EXPECT_EQ(pool.num_free_blocks(), 32);
}

TEST(KvCacheManager, PrefixHitLeavesOneTokenToComputeAndCountsTokens) {
  KvCacheManager kv(16, 4, true, 99);
  std::vector<int32_t> toks = {1, 2, 3, 4, 5, 6, 7, 8};  // exactly two full blocks
  SeqKv a;
  ASSERT_TRUE(kv.allocate_slots(a, 8));
  kv.cache_full_blocks(a, toks, 8);
  PrefixHit hit = kv.find_cached_prefix(toks);
  EXPECT_EQ(hit.num_tokens, 4);  // not 8: the last token must be computed for its logits
  SeqKv b;
  ASSERT_TRUE(kv.allocate_slots(b, 8, &hit));
  EXPECT_EQ(b.groups[0].blocks[0], a.groups[0].blocks[0]);
  EXPECT_NE(b.groups[0].blocks[1], a.groups[0].blocks[1]);
  EXPECT_EQ(kv.prefix_counters().query_tokens, 8);
  EXPECT_EQ(kv.prefix_counters().hit_tokens, 4);
  EXPECT_EQ(kv.pool().ref_count(a.groups[0].blocks[0]), 2);
  kv.free(a);
  kv.free(b);
  kv.check_integrity();
  EXPECT_EQ(kv.num_used_blocks(), 0);
}

TEST(KvCacheManager, FullBlocksHitOnlyWithCachingOn) {
  KvCacheManager kv1(8, 2, true, 1);
  std::vector<int32_t> toks = {1, 2, 3};
  SeqKv a;
  ASSERT_TRUE(kv1.allocate_slots(a, 3));
  kv1.cache_full_blocks(a, toks, 3);
  EXPECT_EQ(kv1.find_cached_prefix(toks).num_tokens, 2);
  KvCacheManager kv2(8, 2, false, 1);
  EXPECT_EQ(kv2.find_cached_prefix(toks).num_tokens, 0);  // caching off
}

}  // namespace
}  // namespace slimkv
