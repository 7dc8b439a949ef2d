// The scheduler's only door to KV memory: block tables per sequence, slot allocation, prefix-cache lookups and
// registration (chained block hashes), and freeing. Decides in pure functions (find_cached_prefix), mutates in
// one call per action (allocate_slots, cache_full_blocks, free).
// Must not know: requests, sampling or the model (a sequence is its SeqKv plus its token ids).
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "kv/block_pool.h"

namespace slimkv {

struct SeqKv {                        // a sequence's KV bookkeeping, held by its owner (the Request)
  std::vector<BlockId> blocks;        // block table: token i lives in blocks[i / block_size]; -1 = evicted
  std::vector<BlockHash> hashes;      // chained hashes of the first hashes.size() full blocks
  std::vector<float> importance;      // [logical blocks] attention mass received (dynamic retention)
  BlockId summary_block = -1;         // merge policy: a block whose rows are summaries of evicted blocks
  std::vector<float> summary_count;   // [block_size] tokens each summary row stands for (0 = empty row)
  std::vector<float> summary_weight;  // [block_size] importance weight folded into each summary row
  int32_t num_registered_blocks = 0;  // leading blocks already offered to the prefix cache
};

struct PrefixHit {
  std::vector<BlockId> blocks;  // cached blocks covering the first num_tokens tokens
  std::vector<BlockHash> hashes;
  int32_t num_tokens = 0;        // a multiple of block_size, always < the sequence length
  int32_t num_query_tokens = 0;  // tokens looked up (for the hit-rate counters)
};

struct PrefixCacheCounters {
  int64_t query_tokens = 0;
  int64_t hit_tokens = 0;
};

class KvCacheManager {
 public:
  // cache_salt: a hash of everything that changes the stored bytes (model, dtype, later the compression config).
  KvCacheManager(int32_t num_blocks, int32_t block_size_tokens, bool enable_prefix_caching, uint64_t cache_salt);

  int32_t block_size() const { return block_size_; }
  int32_t num_free_blocks() const { return pool_.num_free_blocks(); }
  int32_t num_used_blocks() const { return pool_.num_used_blocks(); }
  int32_t num_blocks() const { return pool_.num_blocks(); }
  double usage() const { return static_cast<double>(num_used_blocks()) / num_blocks(); }
  const PrefixCacheCounters& prefix_counters() const { return counters_; }
  const BlockPool& pool() const { return pool_; }

  // Pure: the longest run of cached full blocks at the start of `tokens`, leaving >= 1 token to compute.
  PrefixHit find_cached_prefix(std::span<const int32_t> tokens) const;
  // Gives `seq` blocks for its first num_tokens tokens. With a hit (only for an empty seq) the hit blocks
  // become its first blocks. All or nothing: false (and no change) when the pool is short.
  bool allocate_slots(SeqKv& seq, int32_t num_tokens, const PrefixHit* hit = nullptr);
  // Offers the newly full blocks among the first num_computed_tokens tokens to the prefix cache, then (with a
  // retention window) frees the blocks no future query can see: wholly after the sinks and before the window.
  void cache_full_blocks(SeqKv& seq, std::span<const int32_t> tokens, int32_t num_computed_tokens);
  // Static sparse retention: queries see positions [0, sink_tokens) and their last window_tokens; 0 = all.
  void set_retention(int32_t sink_tokens, int32_t window_tokens) {
    sink_tokens_ = sink_tokens;
    window_tokens_ = window_tokens;
  }
  int64_t num_evicted_blocks() const { return num_evicted_; }
  // Dynamic retention: after the prompt, keep the sink blocks, the window, and the most-attended other blocks up to
  // topk_tokens in all; evict (free) the least attended. Ties go to the older block.
  void set_dynamic_retention(int32_t sink_tokens, int32_t window_tokens, int32_t topk_tokens) {
    dyn_sinks_ = sink_tokens;
    dyn_window_ = window_tokens;
    dyn_topk_ = topk_tokens;
  }
  void evict_least_attended(SeqKv& seq, int32_t num_computed_tokens, int32_t num_prompt_tokens);
  // Merge policy: called with each evicted block (logical index, id, mean attention) before it is released.
  struct Evicted {
    int32_t logical;
    BlockId block;
    float score;
  };
  using EvictHook = std::function<void(SeqKv&, const std::vector<Evicted>&)>;
  void set_evict_hook(EvictHook hook) { evict_hook_ = std::move(hook); }
  // Gives seq a summary block (once); false when the pool has none to spare (the evicted blocks are then dropped).
  bool ensure_summary_block(SeqKv& seq);
  // Releases every block (the tail first, so a cached prefix outlives its suffix in the LRU).
  void free(SeqKv& seq);

  void check_integrity() const { pool_.check_integrity(); }

 private:
  BlockHash hash_block(BlockHash parent, std::span<const int32_t> tokens) const;

  int32_t block_size_;
  bool caching_;
  uint64_t salt_;
  BlockPool pool_;
  PrefixCacheCounters counters_;
  int32_t sink_tokens_ = 0, window_tokens_ = 0;
  int64_t num_evicted_ = 0;
  int32_t dyn_sinks_ = 0, dyn_window_ = 0, dyn_topk_ = 0;
  EvictHook evict_hook_;
};

}  // namespace slimkv
