#include "kv/kv_cache_manager.h"

#include <algorithm>

#include "core/check.h"

namespace slimkv {

KvCacheManager::KvCacheManager(int32_t num_blocks, int32_t block_size_tokens, bool enable_prefix_caching,
                               uint64_t cache_salt)
    : block_size_(block_size_tokens), caching_(enable_prefix_caching), salt_(cache_salt),
      pool_(num_blocks, enable_prefix_caching) {
  SLIMKV_CHECK(block_size_tokens >= 1, "block size must be >= 1");
}

BlockHash KvCacheManager::hash_block(BlockHash parent, std::span<const int32_t> tokens) const {
  // FNV-1a over (salt, parent, tokens) with a final avalanche; hits are verified against the stored tokens.
  uint64_t h = 0xcbf29ce484222325ull ^ salt_;
  auto mix = [&h](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xFF;
      h *= 0x100000001b3ull;
    }
  };
  mix(parent);
  for (int32_t t : tokens) mix(static_cast<uint32_t>(t));
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

PrefixHit KvCacheManager::find_cached_prefix(std::span<const int32_t> tokens) const {
  PrefixHit hit;
  hit.num_query_tokens = static_cast<int32_t>(tokens.size());
  if (!caching_) return hit;
  const int64_t max_blocks = (static_cast<int64_t>(tokens.size()) - 1) / block_size_;  // keep >= 1 to compute
  BlockHash parent = 0;
  for (int64_t b = 0; b < max_blocks; ++b) {
    auto blk = tokens.subspan(b * block_size_, block_size_);
    BlockHash h = hash_block(parent, blk);
    auto id = pool_.lookup(h, blk);
    if (!id) break;
    hit.blocks.push_back(*id);
    hit.hashes.push_back(h);
    parent = h;
  }
  hit.num_tokens = static_cast<int32_t>(hit.blocks.size()) * block_size_;
  return hit;
}

bool KvCacheManager::allocate_slots(SeqKv& seq, int32_t num_tokens, const PrefixHit* hit) {
  const int32_t have = static_cast<int32_t>(seq.blocks.size());
  const int32_t hit_blocks = hit ? static_cast<int32_t>(hit->blocks.size()) : 0;
  SLIMKV_CHECK(hit_blocks == 0 || have == 0, "allocate_slots: a prefix hit applies only to an empty sequence");
  const int32_t need_total = (num_tokens + block_size_ - 1) / block_size_;
  const int32_t need_new = std::max(0, need_total - have - hit_blocks);
  int32_t hit_unreferenced = 0;  // hit blocks now in the free queue stop being free once retained
  for (int32_t i = 0; i < hit_blocks; ++i) hit_unreferenced += pool_.ref_count(hit->blocks[i]) == 0;
  if (need_new > pool_.num_free_blocks() - hit_unreferenced) return false;
  if (hit) {
    for (BlockId id : hit->blocks) pool_.retain(id);
    seq.blocks = hit->blocks;
    seq.hashes = hit->hashes;
    seq.num_registered_blocks = hit_blocks;
    counters_.query_tokens += hit->num_query_tokens;
    counters_.hit_tokens += hit->num_tokens;
  }
  auto fresh = pool_.allocate(need_new);
  SLIMKV_CHECK(fresh.has_value(), "allocate_slots: pool changed between check and allocation");
  seq.blocks.insert(seq.blocks.end(), fresh->begin(), fresh->end());
  return true;
}

void KvCacheManager::cache_full_blocks(SeqKv& seq, std::span<const int32_t> tokens, int32_t num_computed_tokens) {
  const int32_t full = std::min<int32_t>(num_computed_tokens / block_size_, static_cast<int32_t>(seq.blocks.size()));
  if (caching_) {
    for (int32_t b = seq.num_registered_blocks; b < full; ++b) {
      auto blk = tokens.subspan(static_cast<size_t>(b) * block_size_, block_size_);
      if (static_cast<int32_t>(seq.hashes.size()) == b) {
        seq.hashes.push_back(hash_block(b == 0 ? 0 : seq.hashes[b - 1], blk));
      }
      if (seq.blocks[b] >= 0) pool_.register_hash(seq.blocks[b], seq.hashes[b], blk);
    }
    seq.num_registered_blocks = std::max(seq.num_registered_blocks, full);
  }
  if (window_tokens_ > 0) {
    // The next query is at position num_computed_tokens and sees from num_computed_tokens + 1 - window on: blocks
    // wholly after the sinks and before that are never read again.
    const int64_t lo = static_cast<int64_t>(num_computed_tokens) + 1 - window_tokens_;
    const int64_t first = (sink_tokens_ + block_size_ - 1) / block_size_;  // first block holding no sink token
    std::vector<BlockId> drop;
    for (int64_t b = first; b < full && (b + 1) * block_size_ <= lo; ++b) {
      if (seq.blocks[b] < 0) continue;
      drop.push_back(seq.blocks[b]);
      seq.blocks[b] = -1;
    }
    num_evicted_ += static_cast<int64_t>(drop.size());
    pool_.release(drop);
  }
}

void KvCacheManager::evict_least_attended(SeqKv& seq, int32_t num_computed, int32_t num_prompt) {
  if (dyn_topk_ <= 0 || num_computed < num_prompt) return;  // the prompt is scored whole first (SnapKV-style)
  const int64_t lo = static_cast<int64_t>(num_computed) + 1 - dyn_window_;  // the next query's window start
  const int64_t first = (dyn_sinks_ + block_size_ - 1) / block_size_;
  const int64_t budget = std::max(0, (dyn_topk_ - dyn_sinks_ - dyn_window_) / block_size_);
  std::vector<int64_t> cand;  // live blocks wholly after the sinks and before the window
  for (int64_t b = first; b < static_cast<int64_t>(seq.blocks.size()) && (b + 1) * block_size_ <= lo; ++b) {
    if (seq.blocks[b] >= 0) cand.push_back(b);
  }
  if (static_cast<int64_t>(cand.size()) <= budget) return;
  if (seq.importance.size() < seq.blocks.size()) seq.importance.resize(seq.blocks.size(), 0.0f);
  // Mean attention per query that could see the block (accumulated sums favour old blocks, H2O's bias).
  auto score = [&](int64_t b) {
    return seq.importance[b] / static_cast<float>(std::max<int64_t>(1, num_computed - b * block_size_));
  };
  std::stable_sort(cand.begin(), cand.end(), [&](int64_t a, int64_t b) { return score(a) < score(b); });
  std::vector<BlockId> drop;
  std::vector<Evicted> evicted;
  for (size_t i = 0; i < cand.size() - static_cast<size_t>(budget); ++i) {
    drop.push_back(seq.blocks[cand[i]]);
    evicted.push_back({static_cast<int32_t>(cand[i]), seq.blocks[cand[i]], score(cand[i])});
    seq.blocks[cand[i]] = -1;
  }
  if (evict_hook_) evict_hook_(seq, evicted);  // e.g. fold the rows into summaries before the blocks are reused
  num_evicted_ += static_cast<int64_t>(drop.size());
  pool_.release(drop);
}

bool KvCacheManager::ensure_summary_block(SeqKv& seq) {
  if (seq.summary_block >= 0) return true;
  auto b = pool_.allocate(1);
  if (!b) return false;
  seq.summary_block = (*b)[0];
  seq.summary_count.assign(block_size_, 0.0f);
  seq.summary_weight.assign(block_size_, 0.0f);
  return true;
}

void KvCacheManager::free(SeqKv& seq) {
  std::vector<BlockId> rev;
  if (seq.summary_block >= 0) rev.push_back(seq.summary_block);
  for (auto it = seq.blocks.rbegin(); it != seq.blocks.rend(); ++it) {
    if (*it >= 0) rev.push_back(*it);
  }
  pool_.release(rev);
  seq = SeqKv{};
}

}  // namespace slimkv
