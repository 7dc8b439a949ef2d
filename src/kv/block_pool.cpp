#include "kv/block_pool.h"

#include <algorithm>

#include "core/check.h"

namespace slimkv {

BlockPool::BlockPool(int32_t num_blocks, bool enable_caching)
    : caching_(enable_caching),
      ref_count_(num_blocks, 0),
      prev_(num_blocks, -1),
      next_(num_blocks, -1),
      in_queue_(num_blocks, false),
      has_hash_(num_blocks, false),
      hash_(num_blocks, 0),
      tokens_(enable_caching ? num_blocks : 0) {
  SLIMKV_CHECK(num_blocks > 0, "block pool needs at least one block");
  for (BlockId i = 0; i < num_blocks; ++i) queue_insert(i, false);
}

void BlockPool::queue_insert(BlockId id, bool at_front) {
  SLIMKV_CHECK(!in_queue_[id], "block {} is already in the free queue", id);
  if (at_front) {
    prev_[id] = -1;
    next_[id] = head_;
    if (head_ >= 0) prev_[head_] = id;
    else tail_ = id;
    head_ = id;
  } else {
    prev_[id] = tail_;
    next_[id] = -1;
    if (tail_ >= 0) next_[tail_] = id;
    else head_ = id;
    tail_ = id;
  }
  in_queue_[id] = true;
  ++num_free_;
}

void BlockPool::queue_remove(BlockId id) {
  SLIMKV_CHECK(in_queue_[id], "block {} is not in the free queue", id);
  if (prev_[id] >= 0) next_[prev_[id]] = next_[id];
  else head_ = next_[id];
  if (next_[id] >= 0) prev_[next_[id]] = prev_[id];
  else tail_ = prev_[id];
  prev_[id] = next_[id] = -1;
  in_queue_[id] = false;
  --num_free_;
}

void BlockPool::drop_hash(BlockId id) {
  if (!has_hash_[id]) return;
  auto it = index_.find(hash_[id]);
  if (it != index_.end() && it->second == id) index_.erase(it);
  has_hash_[id] = false;
  tokens_[id].clear();
}

void BlockPool::uncache(BlockId id) {
  SLIMKV_CHECK(id >= 0 && id < num_blocks(), "uncache: bad block id {}", id);
  drop_hash(id);
  if (in_queue_[id]) {  // unreferenced: now holds nothing worth keeping, reused first
    queue_remove(id);
    queue_insert(id, /*at_front=*/true);
  }
}

std::optional<std::vector<BlockId>> BlockPool::allocate(int32_t n) {
  SLIMKV_CHECK(n >= 0, "allocate: negative block count {}", n);
  if (n > num_free_) return std::nullopt;
  std::vector<BlockId> out;
  out.reserve(n);
  for (int32_t i = 0; i < n; ++i) {
    BlockId id = head_;
    queue_remove(id);
    if (drop_hook_ && has_hash_[id]) drop_hook_(id, hash_[id], tokens_[id]);
    drop_hash(id);
    ref_count_[id] = 1;
    out.push_back(id);
  }
  return out;
}

void BlockPool::retain(BlockId id) {
  SLIMKV_CHECK(id >= 0 && id < num_blocks(), "retain: bad block id {}", id);
  if (ref_count_[id] == 0) queue_remove(id);
  ++ref_count_[id];
}

void BlockPool::release(std::span<const BlockId> ids) {
  for (BlockId id : ids) {
    SLIMKV_CHECK(id >= 0 && id < num_blocks(), "release: bad block id {}", id);
    SLIMKV_CHECK(ref_count_[id] > 0, "release: block {} is not in use (double free)", id);
    if (--ref_count_[id] == 0) queue_insert(id, /*at_front=*/!has_hash_[id]);
  }
}

std::optional<BlockId> BlockPool::lookup(BlockHash hash, std::span<const int32_t> tokens) const {
  if (!caching_) return std::nullopt;
  auto it = index_.find(hash);
  if (it == index_.end()) return std::nullopt;
  const auto& stored = tokens_[it->second];
  if (!std::equal(stored.begin(), stored.end(), tokens.begin(), tokens.end())) return std::nullopt;
  return it->second;
}

void BlockPool::register_hash(BlockId id, BlockHash hash, std::span<const int32_t> tokens) {
  if (!caching_ || has_hash_[id]) return;
  SLIMKV_CHECK(ref_count_[id] > 0, "register_hash: block {} is not in use", id);
  if (index_.count(hash)) return;  // another block already serves this prefix
  index_.emplace(hash, id);
  has_hash_[id] = true;
  hash_[id] = hash;
  tokens_[id].assign(tokens.begin(), tokens.end());
}

void BlockPool::check_integrity() const {
  int32_t queued = 0;
  BlockId prev = -1;
  for (BlockId id = head_; id >= 0; id = next_[id]) {
    SLIMKV_CHECK(in_queue_[id], "integrity: block {} linked in the free queue but not marked", id);
    SLIMKV_CHECK(prev_[id] == prev, "integrity: broken back link at block {}", id);
    SLIMKV_CHECK(ref_count_[id] == 0, "integrity: block {} in the free queue has {} references", id, ref_count_[id]);
    SLIMKV_CHECK(++queued <= num_blocks(), "integrity: free queue has a cycle");
    prev = id;
  }
  SLIMKV_CHECK(prev == tail_, "integrity: free queue tail mismatch");
  SLIMKV_CHECK(queued == num_free_, "integrity: {} blocks queued but num_free = {}", queued, num_free_);
  for (BlockId id = 0; id < num_blocks(); ++id) {
    SLIMKV_CHECK(ref_count_[id] >= 0, "integrity: block {} has negative ref count", id);
    SLIMKV_CHECK(in_queue_[id] == (ref_count_[id] == 0), "integrity: block {} ref {} but in_queue {}", id,
                 ref_count_[id], in_queue_[id]);
    if (has_hash_[id]) {
      auto it = index_.find(hash_[id]);
      SLIMKV_CHECK(it != index_.end() && it->second == id, "integrity: cached block {} missing from the index", id);
    }
  }
  for (const auto& [h, id] : index_) {
    SLIMKV_CHECK(has_hash_[id] && hash_[id] == h, "integrity: index entry for block {} is stale", id);
  }
}

}  // namespace slimkv
