#include "kv/kv_cache_manager.h"

#include <algorithm>

#include "core/check.h"

namespace slimkv {

KvCacheManager::KvCacheManager(int32_t num_blocks, int32_t block_size_tokens, bool enable_prefix_caching,
                               uint64_t cache_salt, std::vector<KvGroupSpec> groups)
    : KvCacheManager(std::vector<int32_t>{num_blocks}, block_size_tokens, enable_prefix_caching, cache_salt,
                     std::move(groups)) {}

KvCacheManager::KvCacheManager(std::vector<int32_t> pool_blocks, int32_t block_size_tokens, bool enable_prefix_caching,
                               uint64_t cache_salt, std::vector<KvGroupSpec> groups)
    : block_size_(block_size_tokens), caching_(enable_prefix_caching), salt_(cache_salt), groups_(std::move(groups)) {
  SLIMKV_CHECK(block_size_tokens >= 1, "block size must be >= 1");
  SLIMKV_CHECK(!groups_.empty(), "KV cache manager: no groups");
  for (int32_t n : pool_blocks) pools_.emplace_back(n, enable_prefix_caching);
  for (const KvGroupSpec& g : groups_) {
    SLIMKV_CHECK(g.pool >= 0 && g.pool < num_pools(), "KV cache manager: a group uses pool {} of {}", g.pool,
                 num_pools());
    tables_.push_back(make_group_table(g, block_size_tokens));
  }
}

int32_t KvCacheManager::num_free_blocks() const {
  int32_t n = 0;
  for (const BlockPool& p : pools_) n += p.num_free_blocks();
  return n;
}
int32_t KvCacheManager::num_used_blocks() const {
  int32_t n = 0;
  for (const BlockPool& p : pools_) n += p.num_used_blocks();
  return n;
}
int32_t KvCacheManager::num_blocks() const {
  int32_t n = 0;
  for (const BlockPool& p : pools_) n += p.num_blocks();
  return n;
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

BlockHash KvCacheManager::group_hash(BlockHash h, int32_t g) {
  if (g == 0) return h;  // one group: the plain chain
  h ^= 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(g + 1);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 29);
}

int32_t KvCacheManager::held_blocks(const SeqKv& seq) {
  int32_t n = 0;
  for (const GroupKv& g : seq.groups) {
    n += (g.summary_block >= 0) + (g.state_source >= 0) + (g.snapshot_block >= 0);
    n += static_cast<int32_t>(g.draft_states.size());
    for (BlockId b : g.blocks) n += b >= 0;
  }
  return n;
}

bool KvCacheManager::allocate_slots(SeqKv& seq, int32_t num_tokens, const PrefixHit* hit, int32_t first_query_pos,
                                    int32_t snapshot_tokens) {
  const int32_t G = num_groups();
  if (seq.groups.empty()) seq.groups.resize(G);
  const int32_t hit_blocks = hit ? static_cast<int32_t>(hit->hashes.size()) : 0;
  SLIMKV_CHECK(hit_blocks == 0 || seq.groups[0].blocks.empty(),
               "allocate_slots: a prefix hit applies only to an empty sequence");
  std::vector<int32_t> state_start(G, 0);  // recurrent groups: the first position the allocated chunk computes
  for (int32_t g = 0; g < G; ++g) {
    const GroupKv& gk = seq.groups[g];
    if (!tables_[g]->snapshots_state()) continue;
    state_start[g] = !gk.blocks.empty() ? gk.state_tokens : hit ? hit->num_tokens : first_query_pos;
  }
  auto need_total = [&](int32_t g) { return static_cast<int32_t>(tables_[g]->table_blocks(num_tokens)); };
  auto skipped = [&](int32_t g, int64_t b) {  // a block no query from first_query_pos on reads
    return first_query_pos > 0 && !tables_[g]->needed(b, first_query_pos);
  };
  // per pool: new blocks needed, and hit blocks now in the free queue (they stop being free once retained)
  std::vector<int32_t> need_new(pools_.size(), 0), hit_unreferenced(pools_.size(), 0);
  for (int32_t g = 0; g < G; ++g) {
    const int32_t p = groups_[g].pool;
    const int32_t have = static_cast<int32_t>(seq.groups[g].blocks.size());
    // a recurrent group's hit is the snapshot it starts from, not a block of its table
    const bool table_hit = hit_blocks > 0 && !tables_[g]->snapshots_state();
    const int32_t from_hit = table_hit ? static_cast<int32_t>(hit->blocks[g].size()) : 0;
    for (int64_t b = std::max(have, from_hit); b < need_total(g); ++b) need_new[p] += skipped(g, b) ? 0 : 1;
    // the merge policy's summary block, taken with the sequence's first blocks: whether evicted blocks merge or
    // drop never depends on what else the pool holds when the first eviction comes
    need_new[p] += groups_[g].dyn_merge && seq.groups[g].summary_block < 0 ? 1 : 0;
    if (hit_blocks > 0) {
      for (BlockId id : hit->blocks[g]) hit_unreferenced[p] += id >= 0 && pools_[p].ref_count(id) == 0;
    }
  }
  for (size_t p = 0; p < pools_.size(); ++p) {
    if (need_new[p] > pools_[p].num_free_blocks() - hit_unreferenced[p]) return false;
  }
  if (hit_blocks > 0) {
    for (int32_t g = 0; g < G; ++g) {
      for (BlockId id : hit->blocks[g]) {
        if (id >= 0) gpool(g).retain(id);
      }
      if (tables_[g]->snapshots_state()) {
        seq.groups[g].state_source = hit->blocks[g].empty() ? -1 : hit->blocks[g][0];
        seq.groups[g].state_source_tokens = hit->num_tokens;
      } else {
        seq.groups[g].blocks = hit->blocks[g];
      }
    }
    seq.hashes = hit->hashes;
    seq.num_registered_blocks = hit_blocks;
  }
  if (hit) {
    counters_.query_tokens += hit->num_query_tokens;
    counters_.hit_tokens += hit->num_tokens;
  }
  for (int32_t g = 0; g < G; ++g) {
    std::vector<BlockId>& blocks = seq.groups[g].blocks;
    const int32_t first = static_cast<int32_t>(blocks.size());
    int32_t n = 0;
    for (int64_t b = first; b < need_total(g); ++b) n += skipped(g, b) ? 0 : 1;
    auto fresh = gpool(g).allocate(n);
    SLIMKV_CHECK(fresh.has_value(), "allocate_slots: pool changed between check and allocation");
    size_t next = 0;
    for (int64_t b = first; b < need_total(g); ++b) blocks.push_back(skipped(g, b) ? -1 : (*fresh)[next++]);
  }
  for (int32_t g = 0; g < G; ++g) {
    seq.groups[g].state_tokens = num_tokens;
    if (groups_[g].dyn_merge) {
      SLIMKV_CHECK(ensure_summary_block(seq, g), "allocate_slots: pool changed between check and allocation");
    }
  }
  if (caching_ && snapshot_tokens > 0) plan_state_snapshots(seq, num_tokens, state_start, snapshot_tokens);
  return true;
}

void KvCacheManager::plan_state_snapshots(SeqKv& seq, int32_t num_tokens, const std::vector<int32_t>& state_start,
                                          int32_t snapshot_tokens) {
  std::vector<std::vector<int32_t>> want(pools_.size());  // [pool] groups whose chunk computes the boundary token
  for (int32_t g = 0; g < num_groups(); ++g) {
    GroupKv& gk = seq.groups[g];
    if (!tables_[g]->snapshots_state() || gk.snapshot_tokens != 0 || num_tokens < snapshot_tokens) continue;
    gk.snapshot_tokens = snapshot_tokens;  // reached (or passed, from a hit or a prefilled start): planned once
    if (state_start[g] < snapshot_tokens) want[groups_[g].pool].push_back(g);
  }
  // All or none per pool (a hit needs every recurrent group's snapshot); without spare blocks, no snapshot.
  for (size_t p = 0; p < pools_.size(); ++p) {
    if (want[p].empty()) continue;
    auto blocks = pools_[p].allocate(static_cast<int32_t>(want[p].size()));
    if (!blocks) continue;
    for (size_t i = 0; i < want[p].size(); ++i) seq.groups[want[p][i]].snapshot_block = (*blocks)[i];
  }
}

void KvCacheManager::settle_state_snapshots(SeqKv& seq, std::span<const int32_t> tokens, int32_t num_computed) {
  for (int32_t g = 0; g < num_groups(); ++g) {
    if (!tables_[g]->snapshots_state()) continue;
    GroupKv& gk = seq.groups[g];
    if (gk.state_source >= 0 && num_computed > gk.state_source_tokens) {  // read by the chunk after the hit
      const BlockId read[] = {gk.state_source};
      gpool(g).release(read);
      gk.state_source = -1;
    }
    if (gk.snapshot_block >= 0 && num_computed >= gk.snapshot_tokens) {  // filled: cached under its prefix's hash
      const size_t b = static_cast<size_t>(gk.snapshot_tokens / block_size_ - 1);
      if (b < seq.hashes.size()) {
        gpool(g).register_hash(gk.snapshot_block, group_hash(seq.hashes[b], g),
                               tokens.subspan(b * block_size_, block_size_));
      }
      const BlockId filled[] = {gk.snapshot_block};
      gpool(g).release(filled);  // unreferenced: findable until the pool reuses it
      gk.snapshot_block = -1;
    }
  }
}

bool KvCacheManager::allocate_draft_states(SeqKv& seq, int32_t num_drafts) {
  std::vector<int32_t> need(pools_.size(), 0);
  for (int32_t g = 0; g < num_groups(); ++g) {
    if (!tables_[g]->snapshots_state()) continue;
    SLIMKV_CHECK(g < static_cast<int32_t>(seq.groups.size()) && seq.groups[g].draft_states.empty(),
                 "allocate_draft_states: a sequence without its state, or with drafts unsettled");
    need[groups_[g].pool] += num_drafts;
  }
  for (size_t p = 0; p < pools_.size(); ++p) {
    if (need[p] > pools_[p].num_free_blocks()) return false;
  }
  for (int32_t g = 0; g < num_groups(); ++g) {
    if (!tables_[g]->snapshots_state() || num_drafts <= 0) continue;
    auto fresh = gpool(g).allocate(num_drafts);
    SLIMKV_CHECK(fresh.has_value(), "allocate_draft_states: pool changed between check and allocation");
    seq.groups[g].draft_states = std::move(*fresh);
  }
  return true;
}

void KvCacheManager::settle_draft_states(SeqKv& seq, int32_t num_accepted, int32_t num_computed_tokens) {
  for (int32_t g = 0; g < static_cast<int32_t>(seq.groups.size()); ++g) {
    GroupKv& gk = seq.groups[g];
    if (gk.draft_states.empty()) continue;
    SLIMKV_CHECK(num_accepted >= 0 && num_accepted <= static_cast<int32_t>(gk.draft_states.size()) &&
                     !gk.blocks.empty(), "settle_draft_states: {} accepted of {} drafts", num_accepted,
                 gk.draft_states.size());
    if (num_accepted < static_cast<int32_t>(gk.draft_states.size())) {
      std::swap(gk.blocks[0], gk.draft_states[num_accepted]);  // the state after the last accepted row goes live
    }
    gpool(g).release(gk.draft_states);
    gk.draft_states.clear();
    gk.state_tokens = num_computed_tokens;
  }
}

void KvCacheManager::cache_full_blocks(SeqKv& seq, std::span<const int32_t> tokens, int32_t num_computed_tokens) {
  if (seq.groups.empty()) return;
  const int32_t full = std::min<int32_t>(num_computed_tokens, static_cast<int32_t>(tokens.size())) / block_size_;
  if (caching_) {
    for (int32_t b = seq.num_registered_blocks; b < full; ++b) {
      auto blk = tokens.subspan(static_cast<size_t>(b) * block_size_, block_size_);
      if (static_cast<int32_t>(seq.hashes.size()) == b) {
        seq.hashes.push_back(hash_block(b == 0 ? seq.hash_seed : seq.hashes[b - 1], blk));
      }
      for (int32_t g = 0; g < num_groups(); ++g) {
        const int64_t j = tables_[g]->block_for_token_block(b);  // the group's block this token block completes
        const std::vector<BlockId>& blocks = seq.groups[g].blocks;
        if (j < 0 || j >= static_cast<int64_t>(blocks.size()) || blocks[j] < 0) continue;
        gpool(g).register_hash(blocks[j], group_hash(seq.hashes[b], g), blk);
      }
    }
    seq.num_registered_blocks = std::max(seq.num_registered_blocks, full);
  }
  settle_state_snapshots(seq, tokens, num_computed_tokens);
  for (int32_t g = 0; g < num_groups(); ++g) {
    if (!tables_[g]->frees_behind()) continue;
    // The next query is at position num_computed_tokens: blocks wholly after the sinks and before its window are
    // never read again.
    std::vector<BlockId>& blocks = seq.groups[g].blocks;
    std::vector<BlockId> drop;
    for (int64_t b = 0; b < std::min<int64_t>(full, static_cast<int64_t>(blocks.size())); ++b) {
      if (blocks[b] < 0 || tables_[g]->needed(b, num_computed_tokens)) continue;
      drop.push_back(blocks[b]);
      blocks[b] = -1;
    }
    num_evicted_ += static_cast<int64_t>(drop.size());
    gpool(g).release(drop);
  }
}

void KvCacheManager::evict_least_attended(SeqKv& seq, int32_t num_computed, int32_t num_prompt) {
  for (int32_t g = 0; g < num_groups() && g < static_cast<int32_t>(seq.groups.size()); ++g) {
    if (!tables_[g]->evicts_by_attention()) continue;
    const KvGroupSpec& s = groups_[g];
    // Within the prompt only at its eviction points (multiples of dyn_prefill_evict_tokens): the prompt is otherwise
    // scored whole first (SnapKV).
    const int32_t every = s.prefill_evict_every();
    if (num_computed < num_prompt && (every <= 0 || num_computed % every != 0)) continue;
    GroupKv& gk = seq.groups[g];
    const int64_t lo = static_cast<int64_t>(num_computed) + 1 - s.dyn_window_tokens;  // next query's window start
    const int64_t first = (s.dyn_sink_tokens + block_size_ - 1) / block_size_;
    const int64_t budget = std::max(0, (s.dyn_topk_tokens - s.dyn_sink_tokens - s.dyn_window_tokens) / block_size_);
    std::vector<int64_t> cand;  // live blocks wholly after the sinks and before the window
    for (int64_t b = first; b < static_cast<int64_t>(gk.blocks.size()) && (b + 1) * block_size_ <= lo; ++b) {
      if (gk.blocks[b] >= 0) cand.push_back(b);
    }
    if (static_cast<int64_t>(cand.size()) <= budget) continue;
    if (gk.importance.size() < gk.blocks.size()) gk.importance.resize(gk.blocks.size(), 0.0);
    // Mean attention per query that could see the block (accumulated sums favour old blocks, H2O's bias); when
    // evicting in prefill, per query that scored it (the prompt's tracked positions, then every decode query).
    auto score = [&](int64_t b) {
      const int64_t from = b * block_size_;
      const int64_t queries = every > 0 ? tracked_queries(s, from, num_computed, num_prompt) : num_computed - from;
      return static_cast<float>(gk.importance[b] / static_cast<double>(std::max<int64_t>(1, queries)));
    };
    std::stable_sort(cand.begin(), cand.end(), [&](int64_t a, int64_t b) { return score(a) < score(b); });
    std::vector<BlockId> drop;
    std::vector<Evicted> evicted;
    for (size_t i = 0; i < cand.size() - static_cast<size_t>(budget); ++i) {
      drop.push_back(gk.blocks[cand[i]]);
      evicted.push_back({static_cast<int32_t>(cand[i]), gk.blocks[cand[i]], score(cand[i])});
      gk.blocks[cand[i]] = -1;
    }
    if (evict_hook_ && s.dyn_merge) evict_hook_(seq, g, evicted);  // fold the rows into summaries first
    num_evicted_ += static_cast<int64_t>(drop.size());
    gpool(g).release(drop);
  }
}

// Positions in [from, to) whose queries add to importance (batch_builder's token_track): the last
// dyn_window_tokens before the prompt's end and everything after, and the last dyn_window_tokens before each
// eviction point (multiples of dyn_prefill_evict_tokens).
int64_t KvCacheManager::tracked_queries(const KvGroupSpec& s, int64_t from, int64_t to, int64_t num_prompt) {
  const int64_t every = s.prefill_evict_every(), window = std::min<int64_t>(s.dyn_window_tokens, every);
  const int64_t tail = std::max<int64_t>(from, num_prompt - s.dyn_window_tokens);  // tracked from here on
  const auto before = [&](int64_t x) {  // tracked by the eviction-point rule in [0, x)
    return (x / every) * window + std::max<int64_t>(0, x % every - (every - window));
  };
  int64_t n = std::max<int64_t>(0, to - tail);
  const int64_t mid = std::min(to, tail);
  if (every > 0 && mid > from) n += before(mid) - before(from);
  return n;
}

int32_t KvCacheManager::prefill_chunk_limit(int32_t num_computed, int32_t num_prompt) const {
  int32_t limit = INT32_MAX;
  if (num_computed >= num_prompt) return limit;
  for (const KvGroupSpec& s : groups_) {
    const int32_t every = s.prefill_evict_every();
    if (every > 0) limit = std::min(limit, (num_computed / every + 1) * every - num_computed);
  }
  return limit;
}

int32_t KvCacheManager::rows_before_eviction(int32_t num_computed) const {
  int32_t limit = INT32_MAX;
  for (int32_t g = 0; g < num_groups(); ++g) {
    if (!tables_[g]->evicts_by_attention()) continue;
    // after computing position p the next query's window starts at p + 2 - window: a block boundary there adds a
    // candidate (evict_least_attended). Rows p0 .. p0 + d, with p0 + d the first such p.
    const int64_t bs = block_size_, at = static_cast<int64_t>(num_computed) + 2 - groups_[g].dyn_window_tokens;
    const int64_t d = ((-at) % bs + bs) % bs;
    limit = std::min<int64_t>(limit, d + 1);
  }
  return limit;
}

bool KvCacheManager::ensure_summary_block(SeqKv& seq, int32_t group) {
  GroupKv& gk = seq.groups[group];
  if (gk.summary_block >= 0) return true;
  auto b = gpool(group).allocate(1);
  if (!b) return false;
  gk.summary_block = (*b)[0];
  gk.summary_count.assign(block_size_, 0.0f);
  gk.summary_weight.assign(block_size_, 0.0f);
  return true;
}

void KvCacheManager::free(SeqKv& seq) {
  std::vector<std::vector<BlockId>> rev(pools_.size());  // per pool
  size_t longest = 0;
  for (size_t g = 0; g < seq.groups.size(); ++g) {
    for (BlockId b : {seq.groups[g].summary_block, seq.groups[g].state_source, seq.groups[g].snapshot_block}) {
      if (b >= 0) rev[groups_[g].pool].push_back(b);
    }
    for (BlockId b : seq.groups[g].draft_states) rev[groups_[g].pool].push_back(b);
    longest = std::max(longest, seq.groups[g].blocks.size());
  }
  for (size_t i = longest; i-- > 0;) {  // tail first, across the groups
    for (size_t g = 0; g < seq.groups.size(); ++g) {
      const std::vector<BlockId>& b = seq.groups[g].blocks;
      if (i < b.size() && b[i] >= 0) rev[groups_[g].pool].push_back(b[i]);
    }
  }
  for (size_t p = 0; p < pools_.size(); ++p) pools_[p].release(rev[p]);
  const BlockHash seed = seq.hash_seed;
  seq = SeqKv{};
  seq.hash_seed = seed;
}

}  // namespace slimkv
