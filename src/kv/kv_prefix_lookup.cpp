// KvCacheManager's prefix lookups (kv_cache_manager.h): the longest cached prefix every group can resume from, over
// the pool alone (find_cached_prefix) or over the pool and a second tier (plan_prefix: what a tier should restore),
// both through one walk (resolve_prefix) so they never disagree on what a hit needs.
#include <algorithm>

#include "core/check.h"
#include "kv/kv_cache_manager.h"

namespace slimkv {

std::vector<BlockHash> KvCacheManager::chain_hashes(std::span<const int32_t> tokens, BlockHash hash_seed,
                                                    int64_t num_blocks) const {
  std::vector<BlockHash> out;
  BlockHash parent = hash_seed;
  for (int64_t b = 0; b < num_blocks && (b + 1) * block_size_ <= static_cast<int64_t>(tokens.size()); ++b) {
    parent = hash_block(parent, tokens.subspan(b * block_size_, block_size_));
    out.push_back(parent);
  }
  return out;
}

std::optional<BlockId> KvCacheManager::hold_cached(int32_t g, BlockHash chain_hash, std::span<const int32_t> tokens) {
  auto id = gpool(g).lookup(group_hash(chain_hash, g), tokens);
  if (id) gpool(g).retain(*id);
  return id;
}

std::optional<BlockId> KvCacheManager::adopt_cached_block(int32_t g, BlockHash chain_hash,
                                                          std::span<const int32_t> tokens,
                                                          const std::function<void(BlockId)>& fill) {
  SLIMKV_CHECK(static_cast<int32_t>(tokens.size()) == block_size_, "adopt: {} tokens for a block of {}",
               tokens.size(), block_size_);
  auto ids = gpool(g).allocate(1);
  if (!ids) return std::nullopt;
  const BlockId id = ids->front();
  fill(id);
  gpool(g).register_hash(id, group_hash(chain_hash, g), tokens);
  return id;  // held; hashed: cached and evictable once released
}

KvCacheManager::Resolved KvCacheManager::resolve_prefix(std::span<const int32_t> tokens, BlockHash hash_seed,
                                                        const Lookup& lookup) const {
  Resolved r;
  const int32_t G = num_groups();
  r.tables.assign(G, {});
  if (!caching_) return r;
  // A group that evicts in prefill holds a prompt's blocks only until its next eviction point: a hit would bring
  // back blocks a cold run evicts (or merged), so such layouts never hit.
  for (const KvGroupSpec& s : groups_)
    if (s.prefill_evict_every() > 0) return r;
  const int64_t max_blocks = (static_cast<int64_t>(tokens.size()) - 1) / block_size_;  // keep >= 1 to compute
  std::vector<std::vector<BlockId>> found(G);  // [group][block] what lookup gave, or -1
  BlockHash parent = hash_seed;
  int64_t full_run = max_blocks;  // longest all-found run over the groups that need every block
  bool any_full = false;
  for (int64_t b = 0; b < max_blocks; ++b) {
    auto blk = tokens.subspan(b * block_size_, block_size_);
    const BlockHash h = hash_block(parent, blk);
    r.hashes.push_back(h);
    parent = h;
    bool all_found = true;
    for (int32_t g = 0; g < G; ++g) {
      // a token block that completes none of the group's blocks (and names no state snapshot) is not looked up
      if (tables_[g]->block_for_token_block(b) < 0 && !tables_[g]->snapshots_state()) continue;
      const BlockId v = lookup(g, b, group_hash(h, g), blk);
      found[g].push_back(v);
      if (tables_[g]->needs_every_block()) {
        any_full = true;
        all_found = all_found && v >= 0;
      }
    }
    if (any_full && !all_found) {
      full_run = b;
      break;
    }
  }
  // The largest n <= full_run from which every group can resume (a window needs only what the query at n * bs
  // reads; entries must end on a block boundary).
  int64_t n = full_run;
  for (; n > 0; --n) {
    bool ok = true;
    for (int32_t g = 0; g < G && ok; ++g) ok = tables_[g]->resumable(found[g], n);
    if (ok) break;
  }
  for (int32_t g = 0; g < G; ++g) r.tables[g] = tables_[g]->hit_table(found[g], n);
  r.hashes.resize(n);
  r.num_blocks = n;
  return r;
}

PrefixHit KvCacheManager::find_cached_prefix(std::span<const int32_t> tokens, BlockHash hash_seed) const {
  const Resolved r = resolve_prefix(tokens, hash_seed, [&](int32_t g, int64_t, BlockHash key, auto blk) -> BlockId {
    auto id = gpool(g).lookup(key, blk);
    return id ? *id : -1;
  });
  PrefixHit hit;
  hit.num_query_tokens = static_cast<int32_t>(tokens.size());
  hit.blocks.assign(num_groups(), {});
  for (int32_t g = 0; g < num_groups(); ++g) {
    hit.blocks[g] = r.tables[g];
  }
  hit.hashes = r.hashes;
  hit.num_tokens = static_cast<int32_t>(r.num_blocks) * block_size_;
  return hit;
}

std::vector<KvCacheManager::NeededBlock> KvCacheManager::plan_prefix(
    std::span<const int32_t> tokens, BlockHash hash_seed, const std::function<bool(BlockHash key)>& in_tier) const {
  // Looked up by token block: a group's hit table then names the token blocks (their hashes) the hit reads.
  const Resolved r = resolve_prefix(tokens, hash_seed, [&](int32_t g, int64_t b, BlockHash key, auto blk) -> BlockId {
    return gpool(g).lookup(key, blk) || in_tier(key) ? static_cast<BlockId>(b) : -1;
  });
  std::vector<NeededBlock> out;
  for (int32_t g = 0; g < num_groups(); ++g) {
    for (BlockId b : r.tables[g]) {
      if (b >= 0) out.push_back({g, b, r.hashes[b]});
    }
  }
  // by token block: a restore that stops early keeps the head of every group's chain
  std::stable_sort(out.begin(), out.end(), [](const NeededBlock& a, const NeededBlock& b) {
    return a.token_block < b.token_block;
  });
  return out;
}

}  // namespace slimkv
