#include "kv/kv_cache_config.h"

#include <algorithm>
#include <cmath>

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
  SLIMKV_CHECK(kv_offload_bytes >= (int64_t{1} << 20), "--kv-offload-bytes must be at least 1 MiB (got {})",
               kv_offload_bytes);
  SLIMKV_CHECK(kv_offload_dir.empty() || enable_prefix_caching,
               "--kv-offload-dir keeps prefix-cache blocks: it needs --enable-prefix-caching");
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
  // A pool whose groups are all recurrent states holds a fixed number of blocks per running sequence, whatever its
  // length: it is sized by sequences, the others by full-length sequences' tokens.
  std::vector<bool> per_seq(layout.num_pools(), true);
  for (const KvGroup& g : layout.groups) per_seq[g.spec.pool] = per_seq[g.spec.pool] && g.spec.recurrent_state();
  std::vector<int64_t> need(layout.num_pools());
  int64_t token_bytes = 0, state_bytes = 0;  // one full sequence, over the token pools / the state pools
  for (int32_t p = 0; p < layout.num_pools(); ++p) {
    need[p] = std::max<int64_t>(1, layout.blocks_for_sequence(max_seq_tokens, chunk, p));
    (per_seq[p] ? state_bytes : token_bytes) += need[p] * layout.bytes_per_block(p);
  }
  const int64_t budget = budget_bytes();
  SLIMKV_CHECK(budget >= token_bytes + state_bytes,
               "KV cache memory of {:.1f} MiB is less than one sequence of --max-model-len {} needs ({:.1f} MiB over "
               "{} block pools of {} tokens per block): raise --kv-cache-memory or lower --max-model-len",
               budget / 1048576.0, max_seq_tokens, (token_bytes + state_bytes) / 1048576.0, layout.num_pools(),
               layout.block_size_tokens);
  const bool capped = kv_cache_memory_gib <= 0 && max_num_seqs > 0;  // no explicit budget: at most max_num_seqs
  double seqs = static_cast<double>(budget) / static_cast<double>(token_bytes + state_bytes);
  if (capped) seqs = std::min(seqs, static_cast<double>(max_num_seqs));
  double state_seqs = seqs, token_seqs = seqs;
  if (state_bytes > 0 && token_bytes > 0 && max_num_seqs > 0) {
    // States for up to max_num_seqs running sequences (short ones need little else), within half the budget and
    // leaving the token pools at least one full sequence.
    const double room = std::min(static_cast<double>(budget) / 2, static_cast<double>(budget - token_bytes));
    state_seqs = std::max(seqs, std::min<double>(max_num_seqs, std::floor(room / static_cast<double>(state_bytes))));
    token_seqs = std::max(1.0, (static_cast<double>(budget) - state_seqs * static_cast<double>(state_bytes)) /
                                   static_cast<double>(token_bytes));
    if (capped) token_seqs = std::min(token_seqs, static_cast<double>(max_num_seqs));
  }
  std::vector<int32_t> out;
  for (int32_t p = 0; p < layout.num_pools(); ++p) {
    const double n = per_seq[p] ? state_seqs : token_seqs;
    out.push_back(static_cast<int32_t>(
        std::min<int64_t>(std::max<int64_t>(need[p], static_cast<int64_t>(n * static_cast<double>(need[p]))), 1 << 30)));
  }
  return out;
}

}  // namespace slimkv
