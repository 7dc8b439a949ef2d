// Configuration of the paged KV cache (flags map 1:1 to fields) and the block count it yields for a layout.
// Must not know: models or requests (callers pass the layout and the longest sequence).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kv/kv_layout.h"

namespace slimkv {

struct KvCacheConfig {
  int32_t block_size = 8;               // --block-size: tokens per block, a power of two in 1..256
  double kv_cache_memory_gib = 0;       // --kv-cache-memory: explicit budget; 0 = use the utilization
  double kv_memory_utilization = 0.5;   // --kv-memory-utilization: fraction of available RAM
  bool enable_prefix_caching = true;    // --enable-prefix-caching / --no-enable-prefix-caching
  std::string kv_offload_dir;           // --kv-offload-dir: a disk tier for prefix blocks there (empty = none)
  int64_t kv_offload_bytes = int64_t{4} << 30;  // --kv-offload-bytes: the tier's files in all

  void validate() const;  // throws Error naming the flag
  // Budget in bytes (explicit, or utilization x MemAvailable from /proc/meminfo).
  int64_t budget_bytes() const;
  // Blocks that fit the budget; throws a clear Error when even one sequence of max_seq_tokens (prefilled in chunks
  // of chunk_tokens; 0 = one chunk) does not fit. Without an explicit --kv-cache-memory the pool is also no larger
  // than max_num_seqs full sequences need (0 = no such cap): the utilization default is a ceiling, not a reservation
  // to grow into (a small model's pool otherwise became resident up to half the machine's memory).
  int32_t num_blocks(const KvLayout& layout, int32_t max_seq_tokens, int32_t chunk_tokens = 0,
                     int32_t max_num_seqs = 0) const;
  // Per block pool (KvLayout::num_pools): a one-pool layout gets num_blocks(); a layout with a pool per record size
  // splits the budget in the proportions one full sequence needs, with the same checks and cap.
  std::vector<int32_t> pool_blocks(const KvLayout& layout, int32_t max_seq_tokens, int32_t chunk_tokens = 0,
                                   int32_t max_num_seqs = 0) const;
};

int64_t available_memory_bytes();  // MemAvailable, or 0 when unknown

}  // namespace slimkv
