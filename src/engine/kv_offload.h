// The KV cache's disk tier in the engine (issue T, --kv-offload-dir): a prefix-cache block the pool is about to
// reuse is copied, in its stored form (f16 / int8 / int4 / tq4 pages, latent rows: the bytes as they are), with its
// tokens, to the tier's write queue (tier/disk_tier.h: written by its own thread); before each step, a waiting
// request's full prompt blocks that the pool lacks and the tier has are read back, checked (tokens and checksum)
// and adopted as cached blocks, so the step's admission hits them. For layouts of one full-attention group
// (compressed pages included); others are refused at start with the reason. Keys: the prefix cache's chain hash
// (adapters included) under a fingerprint of the model, the layout and the compression config.
// Must not know: HTTP or requests' text.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "kv/kv_storage.h"
#include "sched/request.h"
#include "tier/disk_tier.h"

namespace slimkv {

struct KvOffloadCounters {
  int64_t offered_blocks = 0;   // blocks the pool dropped and the tier was given
  int64_t restored_blocks = 0;  // blocks read back into the pool
  int64_t restored_tokens = 0;
  DiskTierCounters tier;
};

class KvOffload {
 public:
  // Throws Error when the layout cannot be offloaded (with the reason) or the directory cannot be used.
  KvOffload(const KvLayout& layout, KvStorage& storage, KvCacheManager& kv, DiskTierConfig cfg);

  // Reads back the full blocks of r's tokens that follow what the pool holds, while the tier has them and the pool
  // has free blocks; returns how many blocks it restored.
  int32_t restore(const Request& r);
  // Offers the blocks the pool still caches, up to max_bytes (at shutdown: the next start finds them on disk).
  void save_cached(int64_t max_bytes);
  KvOffloadCounters counters() const;
  DiskTier& tier() { return *tier_; }

 private:
  void offer(BlockId id, BlockHash key, std::span<const int32_t> tokens) noexcept;  // the pool's drop hook
  int32_t restore_chain(const Request& r);
  int64_t payload_bytes() const;
  void copy_out(BlockId id, uint8_t* out) const;   // the block's records, every layer, K then V per head
  void copy_in(BlockId id, const uint8_t* in);

  const KvLayout& layout_;
  KvStorage& storage_;
  KvCacheManager& kv_;
  std::unique_ptr<DiskTier> tier_;
  KvOffloadCounters counters_;
};

// Why a layout cannot be offloaded ("" when it can).
std::string offload_refusal(const KvLayout& layout);

}  // namespace slimkv
