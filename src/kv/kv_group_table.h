// What a KV group's block table does, one class per kind (vLLM v1's SingleTypeKVCacheManager): how many blocks a
// sequence of n tokens needs, which blocks a query still reads (the rest may be freed), which logical block is
// registered under a token block's prefix hash (or, for a recurrent state, that snapshots of the state are), and
// whether a prefix hit can resume there. Pure: the cache
// manager (kv_cache_manager.h) asks these and mutates the pools itself; it dispatches on the kind, never on which
// spec fields are zero.
// Must not know: block pools, hashing or requests.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "kv/block_pool.h"
#include "kv/kv_layout.h"

namespace slimkv {

class KvGroupTable {
 public:
  KvGroupTable(const KvGroupSpec& spec, int32_t block_size) : spec_(spec), bs_(block_size) {}
  virtual ~KvGroupTable() = default;
  const KvGroupSpec& spec() const { return spec_; }

  // Logical blocks of a table holding num_tokens computed tokens.
  int64_t table_blocks(int64_t num_tokens) const { return (spec_.records_for_tokens(num_tokens) + bs_ - 1) / bs_; }
  // Whether logical block b must be live for a query at position pos (else it may be freed, or never allocated).
  virtual bool needed(int64_t /*b*/, int64_t /*pos*/) const { return true; }
  // Frees, after each step, the blocks no future query reads (needed() false): windows.
  virtual bool frees_behind() const { return false; }
  // Evicts by attention beyond a budget after the prompt (KvCacheManager::evict_least_attended).
  virtual bool evicts_by_attention() const { return false; }
  // Prefix caching. The logical block registered under token block tb's hash, or -1 (entries: the entry block
  // that token block completes).
  virtual int64_t block_for_token_block(int64_t tb) const { return tb; }
  // A group that must find every block of a hit (the hit's run ends at its first miss).
  virtual bool needs_every_block() const { return true; }
  // A state updated in place (recurrent): its table blocks are never registered; instead a snapshot of the state
  // after a prefix is (under the hash of the prefix's last token block), every token block is looked up, a hit
  // resumes only where a snapshot ends it, and the hit's table is that snapshot — the state its first chunk reads.
  virtual bool snapshots_state() const { return false; }
  // Whether a hit of n token blocks can resume from the blocks found ([logical] cached id or -1).
  virtual bool resumable(const std::vector<BlockId>& found, int64_t n) const;
  // The hit's block table for n token blocks: the found blocks a resumed query reads (-1 for those it does not).
  virtual std::vector<BlockId> hit_table(const std::vector<BlockId>& found, int64_t n) const;

 protected:
  KvGroupSpec spec_;
  int32_t bs_;
};

// The table for a spec's kind.
std::unique_ptr<KvGroupTable> make_group_table(const KvGroupSpec& spec, int32_t block_size);

}  // namespace slimkv
