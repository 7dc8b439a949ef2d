// The scheduler's only door to KV memory: one block table per KV group per sequence (kv_layout.h) over one block
// pool per record size, slot allocation, prefix-cache lookups and registration (chained block hashes, salted per
// group; recurrent states through snapshots at a prompt boundary), freeing what a group's spec no longer needs
// (blocks behind a window, the least-attended blocks beyond a retention budget). Decides in pure functions (find_cached_prefix), mutates in one call per action (allocate_slots,
// cache_full_blocks, evict_least_attended, free).
// Must not know: requests, sampling or the model (a sequence is its SeqKv plus its token ids).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "kv/block_pool.h"
#include "kv/kv_group_table.h"
#include "kv/kv_layout.h"

namespace slimkv {

struct GroupKv {                      // one group's block table of one sequence
  std::vector<BlockId> blocks;        // token i lives in blocks[i / block_size]; -1 = freed (behind a window) or evicted
  std::vector<double> importance;     // [logical blocks] attention mass received (dynamic retention; double: see
                                      // PagedAttention::page_importance)
  BlockId summary_block = -1;         // merge policy: a block whose rows are summaries of evicted blocks
  std::vector<float> summary_count;   // [block_size] tokens each summary row stands for (0 = empty row)
  std::vector<float> summary_weight;  // [block_size] importance weight folded into each summary row
  // A recurrent state (KvGroupKind::Recurrent: blocks = {the live state}), for prefix caching:
  BlockId state_source = -1;          // a prefix hit's snapshot the sequence's next chunk starts from
  int32_t state_source_tokens = 0;    // the prefix it is the state after (released once a chunk has read it)
  BlockId snapshot_block = -1;        // the step that computes token snapshot_tokens - 1 copies the state here
  int32_t snapshot_tokens = 0;        // the prefix a snapshot is planned for (0: none yet; planned at most once)
  int32_t state_tokens = 0;           // tokens the last allocation covered: where the next chunk starts
  // A speculative verify chunk (issue SD): the state after each of its rows but the last ([its drafts]); once
  // verified, the state after the last accepted row becomes the live one (KvCacheManager::settle_draft_states).
  std::vector<BlockId> draft_states;
};

struct SeqKv {                        // a sequence's KV bookkeeping, held by its owner (the Request)
  std::vector<GroupKv> groups;        // [num_groups], empty until the first allocation
  std::vector<BlockHash> hashes;      // chained hashes of the first hashes.size() full blocks (token content)
  int32_t num_registered_blocks = 0;  // leading blocks already offered to the prefix cache
  // The root of the hash chain: what else the sequence's KV depends on (0: the base model; a LoRA adapter's
  // fingerprint). Kept when the sequence is freed (preempted and recomputed, it chains from it again).
  BlockHash hash_seed = 0;
};

struct PrefixHit {
  std::vector<std::vector<BlockId>> blocks;  // [group][logical] cached blocks; -1 where a windowed group needs none
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
  // cache_salt: a hash of everything that changes the stored bytes (model, dtype, compression config).
  // groups: the block-table behaviour of each KV group (KvLayout::groups), in order.
  KvCacheManager(int32_t num_blocks, int32_t block_size_tokens, bool enable_prefix_caching, uint64_t cache_salt,
                 std::vector<KvGroupSpec> groups = {KvGroupSpec{}});
  // One block pool per KvGroupSpec::pool value (layouts mixing record sizes, kv_layout.h): pool_blocks[p] blocks.
  KvCacheManager(std::vector<int32_t> pool_blocks, int32_t block_size_tokens, bool enable_prefix_caching,
                 uint64_t cache_salt, std::vector<KvGroupSpec> groups);

  int32_t block_size() const { return block_size_; }
  uint64_t salt() const { return salt_; }  // the cache salt it was made with (what changes the stored bytes)
  int32_t num_groups() const { return static_cast<int32_t>(groups_.size()); }
  const KvGroupSpec& group_spec(int32_t g) const { return groups_[g]; }
  // Summed over the pools.
  int32_t num_free_blocks() const;
  int32_t num_used_blocks() const;
  int32_t num_blocks() const;
  int32_t num_pools() const { return static_cast<int32_t>(pools_.size()); }
  double usage() const { return static_cast<double>(num_used_blocks()) / num_blocks(); }
  const PrefixCacheCounters& prefix_counters() const { return counters_; }
  const BlockPool& pool(int32_t p = 0) const { return pools_[p]; }
  int64_t num_evicted_blocks() const { return num_evicted_; }
  // Live blocks a sequence holds, over all groups (summary blocks included).
  static int32_t held_blocks(const SeqKv& seq);

  // Pure: the longest run of cached full blocks at the start of `tokens` that every group can resume from (a
  // windowed group needs only its sinks and the blocks the next query sees), leaving >= 1 token to compute.
  PrefixHit find_cached_prefix(std::span<const int32_t> tokens, BlockHash hash_seed = 0) const;
  // ---- A second tier (engine/kv_offload.h): blocks by their pool key (group_hash) ----
  struct NeededBlock {
    int32_t group;
    int64_t token_block;  // the token block whose chain hash names it (a snapshot's: its prefix's last block)
    BlockHash chain_hash;
  };
  // Pure: the blocks, over every group, that the longest hit would read were the blocks `in_tier` (by pool key)
  // cached too — each group's own rule (a window's sinks and last blocks, entries on a block boundary, a recurrent
  // state's snapshot at the hit's end), ordered by token block.
  std::vector<NeededBlock> plan_prefix(std::span<const int32_t> tokens, BlockHash hash_seed,
                                       const std::function<bool(BlockHash key)>& in_tier) const;
  // The chained hashes of the first num_blocks full blocks of tokens, from hash_seed.
  std::vector<BlockHash> chain_hashes(std::span<const int32_t> tokens, BlockHash hash_seed, int64_t num_blocks) const;
  // Group g's key in its pool for a chain hash (what the pool indexes, and what the drop hook is given).
  static BlockHash group_hash(BlockHash h, int32_t g);
  // Group g's cached block for chain_hash, held (+1 reference: not evicted until release_held), or nullopt.
  std::optional<BlockId> hold_cached(int32_t g, BlockHash chain_hash, std::span<const int32_t> tokens);
  // A free block of group g filled by `fill` (given its id) and registered under chain_hash, held as above;
  // nullopt when the pool has no free block.
  std::optional<BlockId> adopt_cached_block(int32_t g, BlockHash chain_hash, std::span<const int32_t> tokens,
                                            const std::function<void(BlockId)>& fill);
  // Lets held blocks go, in this order (the last one released is the last one the LRU evicts).
  void release_held(int32_t g, std::span<const BlockId> ids) { gpool(g).release(ids); }
  void set_drop_hook(int32_t pool, BlockPool::DropHook hook) { pools_[pool].set_drop_hook(std::move(hook)); }
  void uncache(int32_t pool, BlockId id) { pools_[pool].uncache(id); }
  // Gives every group of `seq` blocks for its first num_tokens tokens. With a hit (only for an empty seq) the hit
  // blocks become its first blocks. All or nothing over the groups: false (and no change) when the pool is short.
  // first_query_pos > 0 (an empty sequence declared computed up to there, benchmarks' synthetic fill): windowed
  // groups get -1 for the blocks no query from that position on can see. snapshot_tokens > 0 (a multiple of the
  // block size): recurrent-state groups keep a snapshot of the state after that prefix for the prefix cache — a
  // spare block (when the pool has one) that the step reaching it fills (GroupKv::snapshot_block).
  bool allocate_slots(SeqKv& seq, int32_t num_tokens, const PrefixHit* hit = nullptr, int32_t first_query_pos = 0,
                      int32_t snapshot_tokens = 0);
  // Speculative decoding on recurrent states: every recurrent-state group of `seq` gets num_drafts spare blocks for
  // the states after a verify chunk's rows but its last. All or nothing: false (no change) when a pool is short.
  // Other groups roll back by position and need nothing.
  bool allocate_draft_states(SeqKv& seq, int32_t num_drafts);
  // After the verify chunk: num_accepted of its drafts kept — the state after its row num_accepted becomes the live
  // state (its drafts' rows all kept: the live state already is), the other spares are let go; the next chunk
  // starts at num_computed_tokens. Without spares, nothing.
  void settle_draft_states(SeqKv& seq, int32_t num_accepted, int32_t num_computed_tokens);
  // Offers the newly full blocks among the first num_computed_tokens tokens to the prefix cache (and a recurrent
  // state's filled snapshot, under its prefix's hash; a hit's snapshot once read is let go), then frees, in
  // windowed groups, the blocks no future query can see: wholly after the sinks and before the window.
  void cache_full_blocks(SeqKv& seq, std::span<const int32_t> tokens, int32_t num_computed_tokens);
  // Dynamic retention (groups with a dynamic spec): after the prompt (after each chunk of it with
  // dyn_prefill_evict), keep the sink blocks, the window, and the most-attended other blocks up to the group's
  // top-K tokens; evict (free) the least attended. Ties: older first.
  void evict_least_attended(SeqKv& seq, int32_t num_computed_tokens, int32_t num_prompt_tokens);
  // The most tokens the next prefill chunk may take so that it ends at the next eviction point of a group that
  // evicts in prefill (then every schedule evicts at the same points); INT32_MAX when none applies.
  int32_t prefill_chunk_limit(int32_t num_computed_tokens, int32_t num_prompt_tokens) const;
  // Speculative decoding: the most rows a verify chunk starting at position num_computed_tokens may have so that no
  // dynamic group could evict between two of them (an eviction point — the next query's window passing a block
  // boundary — only after its last row); INT32_MAX without dynamic groups. Then every row sees the blocks a decode
  // step at its position would.
  int32_t rows_before_eviction(int32_t num_computed_tokens) const;
  // The positions in [from, to) whose queries score the cache in a group of spec s (tracked by batch_builder).
  static int64_t tracked_queries(const KvGroupSpec& s, int64_t from, int64_t to, int64_t num_prompt);
  // Merge policy: called with each evicted block (logical index, id, mean attention) before it is released.
  struct Evicted {
    int32_t logical;
    BlockId block;
    float score;
  };
  using EvictHook = std::function<void(SeqKv&, int32_t group, const std::vector<Evicted>&)>;
  void set_evict_hook(EvictHook hook) { evict_hook_ = std::move(hook); }
  // Gives the group a summary block (once); false when the pool has none to spare (the evicted are dropped).
  bool ensure_summary_block(SeqKv& seq, int32_t group);
  // Releases every block (the tail first, so a cached prefix outlives its suffix in the LRU).
  void free(SeqKv& seq);

  void check_integrity() const {
    for (const BlockPool& p : pools_) p.check_integrity();
  }

 private:
  // The walk behind both lookups: lookup(group, token block, pool key, tokens) gives a value >= 0 when the block is
  // there (-1 when not); returns each group's hit table of those values (-1 where the hit reads nothing).
  using Lookup = std::function<BlockId(int32_t g, int64_t b, BlockHash key, std::span<const int32_t> tokens)>;
  struct Resolved {
    int64_t num_blocks = 0;                   // the hit's token blocks
    std::vector<BlockHash> hashes;            // [num_blocks]
    std::vector<std::vector<BlockId>> tables; // [group] hit table of lookup's values (token blocks fit in 32 bits)
  };
  Resolved resolve_prefix(std::span<const int32_t> tokens, BlockHash hash_seed, const Lookup& lookup) const;
  BlockHash hash_block(BlockHash parent, std::span<const int32_t> tokens) const;
  // Recurrent-state groups: a spare block for the state after snapshot_tokens when this allocation reaches it.
  void plan_state_snapshots(SeqKv& seq, int32_t num_tokens, const std::vector<int32_t>& state_start,
                            int32_t snapshot_tokens);
  // After a step: a read hit snapshot is let go; a filled snapshot is registered under its prefix and let go.
  void settle_state_snapshots(SeqKv& seq, std::span<const int32_t> tokens, int32_t num_computed_tokens);

  int32_t block_size_;
  bool caching_;
  uint64_t salt_;
  std::vector<KvGroupSpec> groups_;
  std::vector<std::unique_ptr<KvGroupTable>> tables_;  // [groups] what each kind's table does (kv_group_table.h)
  std::vector<BlockPool> pools_;  // [pools]
  BlockPool& gpool(int32_t g) { return pools_[groups_[g].pool]; }
  const BlockPool& gpool(int32_t g) const { return pools_[groups_[g].pool]; }
  PrefixCacheCounters counters_;
  int64_t num_evicted_ = 0;
  EvictHook evict_hook_;
};

}  // namespace slimkv
