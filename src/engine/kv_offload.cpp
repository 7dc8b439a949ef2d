#include "engine/kv_offload.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/check.h"

namespace slimkv {

std::string offload_refusal(const KvLayout& layout) {
  if (layout.num_groups() != 1) {
    return fmt::format("the KV layout has {} groups (sliding windows, residual windows, select indexes, natively "
                       "compressed or recurrent streams); the disk tier keeps single-group full-attention caches",
                       layout.num_groups());
  }
  if (layout.groups[0].spec.kind != KvGroupKind::FullAttention) {
    return "the KV group is not full attention (retention or windows free its blocks)";
  }
  return "";
}

KvOffload::KvOffload(const KvLayout& layout, KvStorage& storage, KvCacheManager& kv, DiskTierConfig cfg)
    : layout_(layout), storage_(storage), kv_(kv) {
  const std::string why = offload_refusal(layout);
  SLIMKV_CHECK(why.empty(), "--kv-offload-dir: {}", why);
  tier_ = std::make_unique<DiskTier>(std::move(cfg));
  kv_.set_drop_hook(0, [this](BlockId id, BlockHash key, std::span<const int32_t> tokens) { offer(id, key, tokens); });
}

int64_t KvOffload::payload_bytes() const {
  int64_t bytes = static_cast<int64_t>(layout_.block_size_tokens) * sizeof(int32_t);
  for (const KvLayerGeometry& g : layout_.layers) bytes += g.bytes_per_token() * layout_.block_size_tokens;
  return bytes;
}

void KvOffload::copy_out(BlockId id, uint8_t* out) const {
  const int64_t slot0 = static_cast<int64_t>(id) * layout_.block_size_tokens;
  for (int32_t l = 0; l < layout_.num_layers(); ++l) {
    const KvLayerGeometry& g = layout_.layers[l];
    const int64_t kb = g.k_head_bytes() * layout_.block_size_tokens, vb = g.v_head_bytes() * layout_.block_size_tokens;
    for (int32_t h = 0; h < g.num_kv_heads; ++h) {
      std::memcpy(out, storage_.k_head(l, slot0, h), kb);
      out += kb;
      if (vb > 0) std::memcpy(out, storage_.v_head(l, slot0, h), vb);
      out += vb;
    }
  }
}

void KvOffload::copy_in(BlockId id, const uint8_t* in) {
  const int64_t slot0 = static_cast<int64_t>(id) * layout_.block_size_tokens;
  for (int32_t l = 0; l < layout_.num_layers(); ++l) {
    const KvLayerGeometry& g = layout_.layers[l];
    const int64_t kb = g.k_head_bytes() * layout_.block_size_tokens, vb = g.v_head_bytes() * layout_.block_size_tokens;
    for (int32_t h = 0; h < g.num_kv_heads; ++h) {
      std::memcpy(storage_.k_head(l, slot0, h), in, kb);
      in += kb;
      if (vb > 0) std::memcpy(storage_.v_head(l, slot0, h), in, vb);
      in += vb;
    }
  }
}

// Called inside BlockPool::allocate on the engine thread: nothing may escape (the pool is mid-update), so a failure
// only loses the block from the tier.
void KvOffload::offer(BlockId id, BlockHash key, std::span<const int32_t> tokens) noexcept {
  if (static_cast<int32_t>(tokens.size()) != layout_.block_size_tokens || tier_->contains(key)) return;
  try {
    std::vector<uint8_t> payload(payload_bytes());  // [tokens | layers' records]
    std::memcpy(payload.data(), tokens.data(), tokens.size_bytes());
    copy_out(id, payload.data() + tokens.size_bytes());
    ++counters_.offered_blocks;
    tier_->put(key, std::move(payload));
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

int32_t KvOffload::restore_chain(const Request& r) {
  const int32_t bs = layout_.block_size_tokens;
  const std::span<const int32_t> tokens(r.tokens);
  const int64_t full = (static_cast<int64_t>(tokens.size()) - 1) / bs;  // the last token is always computed
  const std::vector<BlockHash> hashes = kv_.chain_hashes(tokens, r.kv.hash_seed, full);
  int32_t restored = 0;
  // The chain's blocks are held while it is walked: adopting a block evicts the LRU's oldest, which must not be an
  // earlier block of this very prefix (a hit needs the chain whole from its first block).
  std::vector<BlockId> held;
  for (int64_t b = 0; b < static_cast<int64_t>(hashes.size()); ++b) {
    const auto blk = tokens.subspan(b * bs, bs);
    if (auto id = kv_.hold_cached(0, hashes[b], blk)) {
      held.push_back(*id);
      continue;
    }
    const BlockHash key = KvCacheManager::group_hash(hashes[b], 0);
    if (!tier_->contains(key)) break;
    auto payload = tier_->get(key);
    const size_t token_bytes = static_cast<size_t>(bs) * sizeof(int32_t);
    if (!payload || static_cast<int64_t>(payload->size()) != payload_bytes() ||
        std::memcmp(payload->data(), blk.data(), token_bytes) != 0) {
      break;  // a miss (counted by the tier) or another prefix under a colliding key: recomputed
    }
    const uint8_t* records = payload->data() + token_bytes;
    auto id = kv_.adopt_cached_block(0, hashes[b], blk, [&](BlockId id) { copy_in(id, records); });
    if (!id) break;
    held.push_back(*id);
    ++restored;
  }
  std::reverse(held.begin(), held.end());  // the tail first: the prefix's head stays longest
  kv_.release_held(0, held);
  counters_.restored_blocks += restored;
  counters_.restored_tokens += static_cast<int64_t>(restored) * bs;
  return restored;
}

void KvOffload::save_cached(int64_t max_bytes) {
  int64_t saved = 0;
  kv_.pool(0).for_each_cached([&](BlockId id, BlockHash key, std::span<const int32_t> tokens) {
    if (tier_->contains(key) || static_cast<int32_t>(tokens.size()) != layout_.block_size_tokens) return;
    if ((saved += payload_bytes()) > max_bytes) return;  // no more than the tier keeps
    std::vector<uint8_t> payload(payload_bytes());
    std::memcpy(payload.data(), tokens.data(), tokens.size_bytes());
    copy_out(id, payload.data() + tokens.size_bytes());
    tier_->put(key, std::move(payload), /*wait=*/true);
  });
  tier_->flush();
}

KvOffloadCounters KvOffload::counters() const {
  KvOffloadCounters c = counters_;
  c.tier = tier_->counters();
  return c;
}

}  // namespace slimkv
