// Block ids of the paged KV cache: reference counts, a free queue in eviction (LRU) order, and the prefix-cache
// index (block hash -> block) for full blocks. A block with no references stays findable by its hash until it
// is reused, so finished requests' prefixes can be hit later (vLLM's "cached but evictable").
// Owns: block bookkeeping. Must not know: tokens' meaning, requests or the bytes in KvStorage.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace slimkv {

using BlockId = int32_t;
using BlockHash = uint64_t;

class BlockPool {
 public:
  BlockPool(int32_t num_blocks, bool enable_caching);

  int32_t num_blocks() const { return static_cast<int32_t>(ref_count_.size()); }
  int32_t num_free_blocks() const { return num_free_; }  // unreferenced, including cached-evictable ones
  int32_t num_used_blocks() const { return num_blocks() - num_free_; }

  // All or nothing: n blocks with ref count 1, reusing the least recently freed first (dropping their hashes).
  std::optional<std::vector<BlockId>> allocate(int32_t n);
  // +1 reference (a prefix-cache hit on an unreferenced block takes it out of the free queue).
  void retain(BlockId id);
  // -1 reference each. A cached block (it has a hash) reaching 0 goes to the back of the free queue, findable
  // until it is reused (`ids` order is the caller's choice, so a sequence's tail blocks are evicted before its
  // head); one with no hash holds nothing worth keeping and goes to the front, so it is reused before a block
  // that was never touched (the pool's memory becomes resident only as far as the load needs).
  void release(std::span<const BlockId> ids);

  // Prefix-cache index of full blocks. `tokens` are kept to verify hits (no false hit on a hash collision).
  std::optional<BlockId> lookup(BlockHash hash, std::span<const int32_t> tokens) const;
  // Registers a full, computed block. If another block already holds this hash the call does nothing.
  void register_hash(BlockId id, BlockHash hash, std::span<const int32_t> tokens);
  bool is_cached(BlockId id) const { return has_hash_[id]; }
  // Forgets a block's hash without the drop hook (its bytes are not what the hash says: a second tier's read that
  // another rank could not serve); unreferenced, it is reused first.
  void uncache(BlockId id);
  // Called with a cached block's id, hash and tokens just before allocate() reuses it (its bytes still intact):
  // a second tier keeps what the pool drops.
  using DropHook = std::function<void(BlockId, BlockHash, std::span<const int32_t> tokens)>;
  void set_drop_hook(DropHook hook) { drop_hook_ = std::move(hook); }
  // Calls fn(id, hash, tokens) for every cached block (a tier saving the pool's prefix cache at shutdown).
  void for_each_cached(const DropHook& fn) const {
    for (BlockId id = 0; id < num_blocks(); ++id) {
      if (has_hash_[id]) fn(id, hash_[id], tokens_[id]);
    }
  }
  int32_t ref_count(BlockId id) const { return ref_count_[id]; }

  // Checks every invariant (ref counts >= 0, free queue == unreferenced blocks, index <-> block hashes);
  // throws Error naming the first broken one. Tests call it after every operation.
  void check_integrity() const;

 private:
  void queue_insert(BlockId id, bool at_front);  // into the free queue, at its front (reused next) or back
  void queue_remove(BlockId id);
  void drop_hash(BlockId id);

  bool caching_;
  std::vector<int32_t> ref_count_;    // [num_blocks]
  std::vector<BlockId> prev_, next_;  // free queue links, -1 = none; only for unreferenced blocks
  std::vector<bool> in_queue_;        // [num_blocks]
  BlockId head_ = -1, tail_ = -1;     // front = next to reuse
  int32_t num_free_ = 0;
  std::vector<bool> has_hash_;                      // [num_blocks]
  std::vector<BlockHash> hash_;                     // [num_blocks]
  std::vector<std::vector<int32_t>> tokens_;        // [num_blocks] tokens of cached blocks
  std::unordered_map<BlockHash, BlockId> index_;    // hash -> block
  DropHook drop_hook_;
};

}  // namespace slimkv
