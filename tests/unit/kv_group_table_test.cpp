// The block-table kinds (kv/kv_group_table.h), each on its own: how many blocks a sequence needs, which a query
// still reads, which block a token block's prefix hash names, and where a prefix hit can resume.
#include <gtest/gtest.h>

#include "core/check.h"
#include "kv/kv_group_table.h"

namespace slimkv {
namespace {

constexpr int32_t kBlock = 4;

TEST(KvGroupTable, FullAttentionKeepsAndNeedsEveryBlock) {
  const auto t = make_group_table(KvGroupSpec::full(), kBlock);
  EXPECT_EQ(t->table_blocks(9), 3);
  EXPECT_TRUE(t->needed(0, 1000));
  EXPECT_FALSE(t->frees_behind());
  EXPECT_TRUE(t->needs_every_block());
  EXPECT_EQ(t->block_for_token_block(5), 5);
  EXPECT_FALSE(t->resumable({7, -1}, 2));
  EXPECT_TRUE(t->resumable({7, 8, -1}, 2));
  EXPECT_EQ(t->hit_table({7, 8, -1}, 2), (std::vector<BlockId>{7, 8}));
}

TEST(KvGroupTable, WindowNeedsItsSinksAndTheBlocksItsWindowTouches) {
  const auto t = make_group_table(KvGroupSpec::window(8, 2), kBlock);  // sinks in block 0
  // A query at 20 sees [0, 2) and [13, 20]: blocks 0, 3, 4, 5.
  EXPECT_TRUE(t->needed(0, 20));
  EXPECT_FALSE(t->needed(1, 20));
  EXPECT_FALSE(t->needed(2, 20));
  EXPECT_TRUE(t->needed(3, 20));
  EXPECT_TRUE(t->needed(5, 20));
  EXPECT_TRUE(t->frees_behind());
  EXPECT_FALSE(t->needs_every_block());
  // A hit of 5 token blocks (query at 20): the blocks it does not read may be missing and are not kept.
  EXPECT_TRUE(t->resumable({10, -1, -1, 13, 14}, 5));
  EXPECT_FALSE(t->resumable({10, -1, -1, -1, 14}, 5));
  EXPECT_EQ(t->hit_table({10, 11, 12, 13, 14}, 5), (std::vector<BlockId>{10, -1, -1, 13, 14}));
}

TEST(KvGroupTable, DynamicTopKEvictsByAttentionAndNeedsEveryBlockOfAHit) {
  const auto t = make_group_table(KvGroupSpec::dynamic_topk(64, 4, 16, false), kBlock);
  EXPECT_TRUE(t->evicts_by_attention());
  EXPECT_FALSE(t->frees_behind());
  EXPECT_TRUE(t->needs_every_block());
}

TEST(KvGroupTable, EntriesCountEntriesAndResumeOnlyOnEntryBlockBoundaries) {
  const auto t = make_group_table(KvGroupSpec::entries(4), kBlock);  // an entry per 4 tokens, 4 entries a block
  EXPECT_EQ(t->table_blocks(63), 4);  // 15 complete entries
  EXPECT_EQ(t->table_blocks(64), 4);  // 16
  EXPECT_EQ(t->table_blocks(68), 5);  // 17
  // Entry block j is complete with token block 4j + 3.
  EXPECT_EQ(t->block_for_token_block(2), -1);
  EXPECT_EQ(t->block_for_token_block(3), 0);
  EXPECT_EQ(t->block_for_token_block(7), 1);
  EXPECT_FALSE(t->needs_every_block());
  // 4 token blocks = 16 tokens = 4 entries = one whole entry block; 2 token blocks = 2 entries: not a boundary.
  EXPECT_TRUE(t->resumable({30}, 4));
  EXPECT_FALSE(t->resumable({30}, 2));
  EXPECT_FALSE(t->resumable({-1}, 4));
  EXPECT_EQ(t->hit_table({30, 31}, 4), (std::vector<BlockId>{30}));
}

TEST(KvGroupTable, RecurrentStateIsOneBlockAndResumesOnlyFromASnapshot) {
  const auto t = make_group_table(KvGroupSpec::recurrent(), kBlock);
  EXPECT_EQ(t->table_blocks(0), 0);
  EXPECT_EQ(t->table_blocks(1), 1);
  EXPECT_EQ(t->table_blocks(100000), 1);  // per sequence, not per token
  EXPECT_FALSE(t->frees_behind());
  EXPECT_FALSE(t->evicts_by_attention());
  EXPECT_TRUE(t->snapshots_state());
  EXPECT_EQ(t->block_for_token_block(3), -1);  // the live state is never registered
  EXPECT_FALSE(t->needs_every_block());
  // found[b]: a snapshot of the state after token block b. A hit of n blocks needs the one after block n - 1.
  EXPECT_TRUE(t->resumable({-1, -1, 42}, 3));
  EXPECT_FALSE(t->resumable({-1, -1, 42}, 2));
  EXPECT_FALSE(t->resumable({-1, -1}, 3));
  EXPECT_EQ(t->hit_table({-1, -1, 42}, 3), (std::vector<BlockId>{42}));
}

TEST(KvGroupTable, SpecsAreMadeByKindAndRefuseNonsense) {
  EXPECT_EQ(KvGroupSpec::window(8).kind, KvGroupKind::Window);
  EXPECT_EQ(KvGroupSpec::entries(128).kind, KvGroupKind::Entries);
  EXPECT_EQ(KvGroupSpec::dynamic_topk(32, 4, 8, true).kind, KvGroupKind::DynamicTopK);
  EXPECT_THROW(KvGroupSpec::window(0), Error);
  EXPECT_THROW(KvGroupSpec::entries(1), Error);
  EXPECT_THROW(KvGroupSpec::dynamic_topk(0, 0, 0, false), Error);
  EXPECT_EQ(KvGroupSpec::window(16, 4).describe(), "window 16 + 4 sinks");
  EXPECT_EQ(KvGroupSpec::full().describe(), "full attention");
  EXPECT_EQ(KvGroupSpec::recurrent().kind, KvGroupKind::Recurrent);
  EXPECT_EQ(KvGroupSpec::recurrent().describe(), "recurrent state");
}

}  // namespace
}  // namespace slimkv
