#include "kv/kv_cache_config.h"

#include <algorithm>

#include <fstream>
#include <sstream>

#include "core/check.h"
#include "core/checked_math.h"

namespace slimkv {

void KvCacheConfig::validate() const {
  SLIMKV_CHECK(block_size <= 256 && is_power_of_two(block_size),
               "--block-size must be a power of two in 1..256 (got {})", block_size);
  SLIMKV_CHECK(kv_cache_memory_gib >= 0 && kv_cache_memory_gib <= 1 << 20,
               "--kv-cache-memory must be a non-negative number of GiB (got {})", kv_cache_memory_gib);
  SLIMKV_CHECK(kv_memory_utilization > 0 && kv_memory_utilization <= 0.95,
               "--kv-memory-utilization must be in (0, 0.95] (got {})", kv_memory_utilization);
}

int64_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

int64_t KvCacheConfig::budget_bytes() const {
  if (kv_cache_memory_gib > 0) return static_cast<int64_t>(kv_cache_memory_gib * (1ull << 30));
  int64_t avail = available_memory_bytes();
  SLIMKV_CHECK(avail > 0, "cannot read MemAvailable from /proc/meminfo; pass --kv-cache-memory GIB");
  return static_cast<int64_t>(static_cast<double>(avail) * kv_memory_utilization);
}

int32_t KvCacheConfig::num_blocks(const KvLayout& layout, int32_t max_seq_tokens, int32_t chunk_tokens,
                                  int32_t max_num_seqs) const {
  validate();
  const int64_t per_block = layout.bytes_per_block();
  SLIMKV_CHECK(per_block > 0, "KV layout has zero bytes per block");
  const int64_t budget = budget_bytes();
  const int64_t blocks = std::min<int64_t>(budget / per_block, 1 << 30);
  const int64_t need = layout.blocks_for_sequence(max_seq_tokens, chunk_tokens > 0 ? chunk_tokens : max_seq_tokens);
  SLIMKV_CHECK(blocks >= need,
               "KV cache memory of {:.1f} MiB holds {} blocks of {} tokens ({} bytes each), but one sequence of "
               "--max-model-len {} needs {} blocks ({:.1f} MiB): raise --kv-cache-memory or lower --max-model-len",
               budget / 1048576.0, blocks, layout.block_size_tokens, per_block, max_seq_tokens, need,
               need * per_block / 1048576.0);
  if (kv_cache_memory_gib <= 0 && max_num_seqs > 0) {
    return static_cast<int32_t>(std::min<int64_t>(blocks, need * static_cast<int64_t>(max_num_seqs)));
  }
  return static_cast<int32_t>(blocks);
}

std::vector<int32_t> KvCacheConfig::pool_blocks(const KvLayout& layout, int32_t max_seq_tokens, int32_t chunk_tokens,
                                                int32_t max_num_seqs) const {
  if (layout.num_pools() == 1) return {num_blocks(layout, max_seq_tokens, chunk_tokens, max_num_seqs)};
  validate();
  const int64_t chunk = chunk_tokens > 0 ? chunk_tokens : max_seq_tokens;
  std::vector<int64_t> need(layout.num_pools());
  int64_t seq_bytes = 0;  // one full sequence, over the pools
  for (int32_t p = 0; p < layout.num_pools(); ++p) {
    need[p] = std::max<int64_t>(1, layout.blocks_for_sequence(max_seq_tokens, chunk, p));
    seq_bytes += need[p] * layout.bytes_per_block(p);
  }
  const int64_t budget = budget_bytes();
  SLIMKV_CHECK(budget >= seq_bytes,
               "KV cache memory of {:.1f} MiB is less than one sequence of --max-model-len {} needs ({:.1f} MiB over "
               "{} block pools of {} tokens per block): raise --kv-cache-memory or lower --max-model-len",
               budget / 1048576.0, max_seq_tokens, seq_bytes / 1048576.0, layout.num_pools(), layout.block_size_tokens);
  double seqs = static_cast<double>(budget) / static_cast<double>(seq_bytes);
  if (kv_cache_memory_gib <= 0 && max_num_seqs > 0) seqs = std::min(seqs, static_cast<double>(max_num_seqs));
  std::vector<int32_t> out;
  for (int32_t p = 0; p < layout.num_pools(); ++p) {
    out.push_back(static_cast<int32_t>(std::min<int64_t>(std::max<int64_t>(need[p], static_cast<int64_t>(seqs * need[p])),
                                                         1 << 30)));
  }
  return out;
}

}  // namespace slimkv
