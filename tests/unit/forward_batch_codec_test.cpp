// The batch a tensor-parallel server broadcasts each step: encoded and decoded back equal, field by field, and
// bytes that are not a batch refused with a clear error.
#include <gtest/gtest.h>

#include "core/check.h"
#include "model/forward_batch_codec.h"

namespace slimkv {
namespace {

ForwardBatch two_group_batch() {
  ForwardBatch b;
  b.token_ids = {5, 9, 11};
  b.positions = {0, 1, 7};
  b.slots = {{16, 17, 40}, {3, 4, 5}};
  PagedBatchMeta m;
  m.block_size = 8;
  m.token_seq = {0, 0, 1};
  m.token_pos = {0, 1, 7};
  m.kv_indptr = {0, 1, 2};
  m.kv_indices = {2, 5};
  m.kv_last_page_len = {2, 8};
  m.token_ctx = {1, 2, 8};
  m.token_track = {1, 0, 1};
  m.kv_page_logical = {0, -1};
  m.seq_has_summary = {0, 1};
  m.seq_summary_bias = std::vector<float>(16, -1.5f);
  m.seq_query_by_query = {0, 1};  // sequence 1: a speculative verify chunk
  b.attn = {m, PagedBatchMeta{}};
  b.states = {{}, {StateSlots{0, 2, -1, 7, 9, 1, 0, 1}}};  // its state after token 0 also into block 12
  b.draft_state_blocks = {12};
  b.logits_rows = {1, 2};
  b.logits_candidates = 20;
  return b;
}

TEST(ForwardBatchCodec, RoundTripsEveryField) {
  const ForwardBatch b = two_group_batch();
  std::vector<uint8_t> bytes = {1, 2, 3};  // whatever it held is replaced
  encode_forward_batch(b, bytes);
  const ForwardBatch d = decode_forward_batch(bytes);
  EXPECT_EQ(d.token_ids, b.token_ids);
  EXPECT_EQ(d.positions, b.positions);
  EXPECT_EQ(d.slots, b.slots);
  ASSERT_EQ(d.attn.size(), 2u);
  const PagedBatchMeta &x = d.attn[0], &y = b.attn[0];
  EXPECT_EQ(x.block_size, y.block_size);
  EXPECT_EQ(x.token_seq, y.token_seq);
  EXPECT_EQ(x.token_pos, y.token_pos);
  EXPECT_EQ(x.kv_indptr, y.kv_indptr);
  EXPECT_EQ(x.kv_indices, y.kv_indices);
  EXPECT_EQ(x.kv_last_page_len, y.kv_last_page_len);
  EXPECT_EQ(x.token_ctx, y.token_ctx);
  EXPECT_EQ(x.token_track, y.token_track);
  EXPECT_EQ(x.kv_page_logical, y.kv_page_logical);
  EXPECT_EQ(x.seq_has_summary, y.seq_has_summary);
  EXPECT_EQ(x.seq_summary_bias, y.seq_summary_bias);
  EXPECT_EQ(x.seq_query_by_query, y.seq_query_by_query);
  EXPECT_TRUE(d.attn[1].kv_indices.empty());
  ASSERT_EQ(d.states.size(), 2u);
  ASSERT_EQ(d.states[1].size(), 1u);
  EXPECT_EQ(d.states[1][0].out_block, 7);
  EXPECT_EQ(d.states[1][0].snapshot_token, 1);
  EXPECT_EQ(d.states[1][0].num_draft_states, 1);
  EXPECT_EQ(d.draft_state_blocks, b.draft_state_blocks);
  EXPECT_EQ(d.logits_rows, b.logits_rows);
  EXPECT_EQ(d.logits_candidates, 20);
}

TEST(ForwardBatchCodec, RefusesTruncatedAndTrailingBytes) {
  std::vector<uint8_t> bytes;
  encode_forward_batch(two_group_batch(), bytes);
  for (size_t cut : {size_t{0}, size_t{3}, bytes.size() / 2, bytes.size() - 1}) {
    std::vector<uint8_t> short_bytes(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut));
    EXPECT_THROW(decode_forward_batch(short_bytes), Error) << cut << " bytes";
  }
  bytes.push_back(0);
  EXPECT_THROW(decode_forward_batch(bytes), Error);
}

}  // namespace
}  // namespace slimkv
