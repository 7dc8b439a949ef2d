#include "engine/kv_offload.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/check.h"

namespace slimkv {

std::string offload_refusal(const KvLayout& layout) {
  for (const KvGroup& g : layout.groups) {
    if (g.spec.prefill_evict_every() > 0) {
      return "a KV group evicts by attention while the prompt is computed (--kv-dyn-prefill-evict): its blocks are "
             "never prefix-cached, so there is nothing to keep";
    }
  }
  return "";
}

KvOffload::KvOffload(const KvLayout& layout, KvStorage& storage, KvCacheManager& kv, DiskTierConfig cfg)
    : layout_(layout), storage_(storage), kv_(kv) {
  const std::string why = offload_refusal(layout);
  SLIMKV_CHECK(why.empty(), "--kv-offload-dir: {}", why);
  tier_ = std::make_unique<DiskTier>(std::move(cfg));
  for (int32_t p = 0; p < kv_.num_pools(); ++p) {
    kv_.set_drop_hook(p, [this, p](BlockId id, BlockHash key, std::span<const int32_t> tokens) {
      offer(p, id, key, tokens);
    });
  }
}

int64_t KvOffload::payload_bytes(int32_t pool) const {
  return static_cast<int64_t>(layout_.block_size_tokens) * sizeof(int32_t) + layout_.bytes_per_block(pool);
}

// A block id of a pool reserves one block of records in each of the pool's storage tensors, whichever group holds
// it: those are its stored form (a window's rows, compressed entries, a recurrent state's snapshot alike). fn gets
// each run of the block's bytes in the storage, in payload order (tensor order, K then V per head).
template <class Fn>
void KvOffload::for_each_record(int32_t pool, BlockId id, Fn&& fn) const {
  const int64_t slot0 = static_cast<int64_t>(id) * layout_.block_size_tokens;
  for (int32_t t = 0; t < layout_.num_tensors(); ++t) {
    if (layout_.tensor_pool[t] != pool) continue;
    const int32_t l = layout_.tensor_layer[t];
    const KvLayerGeometry& g = layout_.layers[l];
    const int64_t kb = g.k_head_bytes() * layout_.block_size_tokens, vb = g.v_head_bytes() * layout_.block_size_tokens;
    for (int32_t h = 0; h < g.num_kv_heads; ++h) {
      fn(storage_.k_head(l, slot0, h), kb);  // storage_ is a reference: writable here too
      if (vb > 0) fn(storage_.v_head(l, slot0, h), vb);
    }
  }
}

std::vector<uint8_t> KvOffload::make_payload(int32_t pool, BlockId id, std::span<const int32_t> tokens) const {
  std::vector<uint8_t> payload(payload_bytes(pool));  // [tokens | the pool's tensors' records]
  std::memcpy(payload.data(), tokens.data(), tokens.size_bytes());
  uint8_t* out = payload.data() + tokens.size_bytes();
  for_each_record(pool, id, [&](const uint8_t* at, int64_t n) {
    std::memcpy(out, at, n);
    out += n;
  });
  return payload;
}

bool KvOffload::payload_matches(int32_t pool, std::span<const int32_t> tokens,
                                const std::vector<uint8_t>& payload) const {
  return static_cast<int64_t>(payload.size()) == payload_bytes(pool) &&
         std::memcmp(payload.data(), tokens.data(), tokens.size_bytes()) == 0;  // else another prefix's key
}

void KvOffload::fill_from_payload(int32_t pool, BlockId id, const std::vector<uint8_t>& payload) {
  const uint8_t* in = payload.data() + static_cast<size_t>(layout_.block_size_tokens) * sizeof(int32_t);
  for_each_record(pool, id, [&](uint8_t* at, int64_t n) {
    std::memcpy(at, in, n);
    in += n;
  });
}

// Called inside BlockPool::allocate on the engine thread: nothing may escape (the pool is mid-update), so a failure
// only loses the block from the tier.
void KvOffload::offer(int32_t pool, BlockId id, BlockHash key, std::span<const int32_t> tokens) noexcept {
  if (static_cast<int32_t>(tokens.size()) != layout_.block_size_tokens) return;
  try {
    if (tier_->contains(key)) {  // kept already; the other ranks are told still (their copy may have been dropped)
      if (recording_) log_op(false, pool, id, key, tokens);
      return;
    }
    ++counters_.offered_blocks;
    tier_->put(key, make_payload(pool, id, tokens));
    if (recording_) log_op(false, pool, id, key, tokens);
  } catch (...) {
  }
}

int32_t KvOffload::restore(const Request& r) {
  if (pooling_reads_prefix(r.params.pooling)) return 0;  // such a request takes no prefix hit
  try {
    return restore_chain(r);
  } catch (const std::exception& e) {  // the engine thread goes on: the blocks are computed instead
    std::fprintf(stderr, "slimkv: KV disk tier: restoring for request %lld failed: %s\n",
                 static_cast<long long>(r.id), e.what());
    return 0;
  }
}

void KvOffload::prefetch(const Request& r) {
  if (pooling_reads_prefix(r.params.pooling)) return;
  const int32_t bs = layout_.block_size_tokens;
  const std::span<const int32_t> tokens(r.tokens);
  try {
    std::vector<uint64_t> keys;
    for (const auto& nb : kv_.plan_prefix(tokens, r.kv.hash_seed, [&](BlockHash key) { return tier_->contains(key); })) {
      const BlockHash key = KvCacheManager::group_hash(nb.chain_hash, nb.group);
      if (!kv_.pool(layout_.group_pool(nb.group)).lookup(key, tokens.subspan(nb.token_block * bs, bs))) {
        keys.push_back(key);
      }
    }
    tier_->prefetch(keys);
  } catch (const std::exception& e) {  // only a read ahead lost: restore() reads them itself
    std::fprintf(stderr, "slimkv: KV disk tier: read-ahead for request %lld failed: %s\n",
                 static_cast<long long>(r.id), e.what());
  }
}

std::optional<BlockId> KvOffload::read_back(const KvCacheManager::NeededBlock& nb, std::span<const int32_t> blk) {
  const int32_t pool = layout_.group_pool(nb.group);
  const BlockHash key = KvCacheManager::group_hash(nb.chain_hash, nb.group);
  auto payload = tier_->get(key);
  if (!payload || !payload_matches(pool, blk, *payload)) return std::nullopt;  // a miss: recomputed
  auto id = kv_.adopt_cached_block(nb.group, nb.chain_hash, blk, [&](BlockId id) { fill_from_payload(pool, id, *payload); });
  if (id && recording_) log_op(true, pool, *id, key, blk);
  return id;
}

// What the longest hit needs (each group's own rule: kv_cache_manager.h plan_prefix), in token-block order: the
// blocks the pool has are held first, then the tier's are read back until one fails. Every block stays held until
// the walk ends: adopting a block evicts the pool's oldest, which must not be a block this very hit needs.
int32_t KvOffload::restore_chain(const Request& r) {
  const int32_t bs = layout_.block_size_tokens;
  const std::span<const int32_t> tokens(r.tokens);
  const auto needed = kv_.plan_prefix(tokens, r.kv.hash_seed, [&](BlockHash key) { return tier_->contains(key); });
  std::vector<std::vector<BlockId>> held(kv_.num_groups());  // [group] in the order taken
  std::vector<const KvCacheManager::NeededBlock*> absent;
  for (const auto& nb : needed) {
    if (auto id = kv_.hold_cached(nb.group, nb.chain_hash, tokens.subspan(nb.token_block * bs, bs))) {
      held[nb.group].push_back(*id);
    } else {
      absent.push_back(&nb);
    }
  }
  const int64_t hit_before = absent.empty() ? 0 : kv_.find_cached_prefix(tokens, r.kv.hash_seed).num_tokens;
  int32_t restored = 0;
  for (const auto* nb : absent) {
    auto id = read_back(*nb, tokens.subspan(nb->token_block * bs, bs));
    if (!id) break;
    held[nb->group].push_back(*id);
    ++restored;
  }
  const int64_t hit_after = restored == 0 ? hit_before : kv_.find_cached_prefix(tokens, r.kv.hash_seed).num_tokens;
  for (int32_t g = 0; g < kv_.num_groups(); ++g) {
    std::reverse(held[g].begin(), held[g].end());  // the tail first: the prefix's head stays longest
    kv_.release_held(g, held[g]);
  }
  counters_.restored_blocks += restored;
  counters_.restored_tokens += std::max<int64_t>(0, hit_after - hit_before);
  return restored;
}

void KvOffload::save_cached(int64_t max_bytes) {
  int64_t saved = 0;
  for (int32_t p = 0; p < kv_.num_pools(); ++p) {
    kv_.pool(p).for_each_cached([&](BlockId id, BlockHash key, std::span<const int32_t> tokens) {
      if (static_cast<int32_t>(tokens.size()) != layout_.block_size_tokens) return;
      if ((saved += payload_bytes(p)) > max_bytes) return;  // no more than the tier keeps
      if (recording_) log_op(false, p, id, key, tokens);     // the other ranks save theirs (if they lack it)
      if (tier_->contains(key)) return;
      tier_->put(key, make_payload(p, id, tokens), /*wait=*/true);
    });
  }
  log_.wait = 1;
  tier_->flush();
}

void KvOffload::log_op(bool restore, int32_t pool, BlockId id, BlockHash key, std::span<const int32_t> tokens) {
  KvTierOp op;
  op.restore = restore ? 1 : 0;
  op.pool = pool;
  op.block = id;
  op.key = key;
  log_.ops.push_back(op);
  log_.tokens.insert(log_.tokens.end(), tokens.begin(), tokens.end());
}

KvTierOps KvOffload::take_ops() {
  KvTierOps out;
  std::swap(out, log_);
  return out;
}

std::vector<double> KvOffload::apply(const KvTierOps& ops) {
  const int32_t bs = layout_.block_size_tokens;
  SLIMKV_CHECK(ops.tokens.size() == ops.ops.size() * bs, "KV tier ops: {} tokens for {} blocks of {}",
               ops.tokens.size(), ops.ops.size(), bs);
  std::vector<double> failed;
  for (size_t i = 0; i < ops.ops.size(); ++i) {
    const KvTierOp& op = ops.ops[i];
    SLIMKV_CHECK(op.pool >= 0 && op.pool < kv_.num_pools() && op.block >= 0 && op.block < kv_.pool(op.pool).num_blocks(),
                 "KV tier ops: block {} of pool {}", op.block, op.pool);
    const std::span<const int32_t> blk(ops.tokens.data() + i * bs, bs);
    if (!op.restore) {
      if (tier_->contains(op.key)) continue;
      ++counters_.offered_blocks;
      tier_->put(op.key, make_payload(op.pool, op.block, blk), ops.wait != 0);
      continue;
    }
    auto payload = tier_->get(op.key);
    const bool ok = payload && payload_matches(op.pool, blk, *payload);
    if (ok) {
      fill_from_payload(op.pool, op.block, *payload);
      ++counters_.restored_blocks;
    }
    failed.push_back(ok ? 0.0 : 1.0);
  }
  if (ops.wait) tier_->flush();
  return failed;
}

void KvOffload::settle(const KvTierOps& ops, std::span<const double> failed) {
  size_t r = 0;
  for (const KvTierOp& op : ops.ops) {
    if (!op.restore) continue;
    if (r < failed.size() && failed[r] > 0) {
      kv_.uncache(op.pool, op.block);
      ++counters_.unshared_blocks;
    }
    ++r;
  }
}

KvOffloadCounters KvOffload::counters() const {
  KvOffloadCounters c = counters_;
  c.tier = tier_->counters();
  return c;
}

}  // namespace slimkv
