// The KV cache's disk tier in the engine (issue T, --kv-offload-dir): a prefix-cache block any pool is about to
// reuse is copied, in its stored form (a block id's records in each of its pool's storage tensors: f16 / int8 /
// int4 / tq4 pages, latent rows, compressed entries, a recurrent state's snapshot — the bytes as they are), with
// its tokens, to the tier's write queue (tier/disk_tier.h: written by its own thread); before each step, the blocks
// a waiting request's longest hit needs (each KV group's own rule: KvCacheManager::plan_prefix) that the pool lacks
// and the tier has are read back, checked (tokens and checksum) and adopted as cached blocks, so the step's
// admission hits them. Keys: the prefix cache's per-group keys (adapters included) under a fingerprint of the
// model, the layout and the compression config.
// Must not know: HTTP or requests' text.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "engine/kv_tier_ops.h"
#include "kv/kv_storage.h"
#include "sched/request.h"
#include "tier/disk_tier.h"

namespace slimkv {

struct KvOffloadCounters {
  int64_t offered_blocks = 0;   // blocks the pool dropped and the tier was given
  int64_t restored_blocks = 0;  // blocks read back into the pool
  int64_t restored_tokens = 0;
  int64_t unshared_blocks = 0;  // read back by rank 0 but not by another rank (tensor parallelism): forgotten
  DiskTierCounters tier;
};

class KvOffload {
 public:
  // Throws Error when the layout cannot be offloaded (with the reason) or the directory cannot be used.
  KvOffload(const KvLayout& layout, KvStorage& storage, KvCacheManager& kv, DiskTierConfig cfg);

  // Reads back the full blocks of r's tokens that follow what the pool holds, while the tier has them and the pool
  // has free blocks; returns how many blocks it restored.
  int32_t restore(const Request& r);
  // Has the tier read r's blocks as restore() would (absent from the pool) ahead, on its I/O thread.
  void prefetch(const Request& r);
  // Offers the blocks the pool still caches, up to max_bytes (at shutdown: the next start finds them on disk).
  void save_cached(int64_t max_bytes);
  KvOffloadCounters counters() const;
  DiskTier& tier() { return *tier_; }

  // ---- Tensor parallelism: each rank keeps a tier of its own heads; rank 0 decides, the others follow ----
  // Rank 0: log every save and read back (take_ops: the log since the last take, in order).
  void record_ops(bool on) { recording_ = on; }
  KvTierOps take_ops();
  // The other ranks: rank 0's ops on this rank's heads, in order; returns, per read back, 1 where this rank could
  // not serve it (absent, short, corrupt or other tokens), else 0.
  std::vector<double> apply(const KvTierOps& ops);
  // Rank 0: forgets the blocks some rank could not read back (failed[i] > 0 for the i-th read back of ops).
  void settle(const KvTierOps& ops, std::span<const double> failed);

 private:
  // the pools' drop hook
  void offer(int32_t pool, BlockId id, BlockHash key, std::span<const int32_t> tokens) noexcept;
  int32_t restore_chain(const Request& r);
  // One needed block from the tier into a free block of its group, registered and held; nullopt on any miss.
  std::optional<BlockId> read_back(const KvCacheManager::NeededBlock& nb, std::span<const int32_t> blk);
  int64_t payload_bytes(int32_t pool) const;  // [tokens | records]
  // A block id's records in each of the pool's storage tensors, in tensor order, K then V per head.
  template <class Fn>
  void for_each_record(int32_t pool, BlockId id, Fn&& fn) const;
  std::vector<uint8_t> make_payload(int32_t pool, BlockId id, std::span<const int32_t> tokens) const;
  // A payload of the pool's size whose tokens are these (else a miss, or another prefix under a colliding key).
  bool payload_matches(int32_t pool, std::span<const int32_t> tokens, const std::vector<uint8_t>& payload) const;
  void fill_from_payload(int32_t pool, BlockId id, const std::vector<uint8_t>& payload);

  const KvLayout& layout_;
  KvStorage& storage_;
  KvCacheManager& kv_;
  std::unique_ptr<DiskTier> tier_;
  KvOffloadCounters counters_;
  bool recording_ = false;
  KvTierOps log_;
  void log_op(bool restore, int32_t pool, BlockId id, BlockHash key, std::span<const int32_t> tokens);
};

// Why a layout cannot be offloaded ("" when it can).
std::string offload_refusal(const KvLayout& layout);

}  // namespace slimkv
