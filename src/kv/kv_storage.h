// The KV cache's memory: per storage tensor (kv_layout.h: layers of different groups at the same slot share one),
// one K and one V region of [num_kv_heads, num_blocks, block_size, head_bytes] bytes — one plane per KV head, so a
// head's rows of consecutive blocks are contiguous (attention walks one head of one sequence at a time, and
// streams) — reserved once at start-up (anonymous mmap on huge pages where offered: touched when written).
// Owns: the bytes. Must not know: block ownership, hashing or requests (BlockPool and KvCacheManager do).
#pragma once
#include <cstdint>
#include <vector>

#include "kv/kv_layout.h"

namespace slimkv {

class KvStorage {
 public:
  KvStorage(const KvLayout& layout, int32_t num_blocks);  // every pool num_blocks (one-pool layouts)
  KvStorage(const KvLayout& layout, std::vector<int32_t> pool_blocks);  // [layout.num_pools()] blocks per pool
  ~KvStorage();
  KvStorage(const KvStorage&) = delete;
  KvStorage& operator=(const KvStorage&) = delete;

  const KvLayout& layout() const { return layout_; }
  int32_t num_blocks() const { return pool_blocks_[0]; }
  int32_t num_blocks(int32_t pool) const { return pool_blocks_[pool]; }
  const std::vector<int32_t>& pool_blocks() const { return pool_blocks_; }
  int64_t size_bytes() const { return size_bytes_; }
  // One token's record of one KV head of `layer`: slot = block_id * block_size + offset in block, where block_id
  // comes from the block table of the layer's group.
  uint8_t* k_head(int32_t layer, int64_t slot, int32_t head) {
    const KvLayerGeometry& g = layout_.layers[layer];
    return k_[g.tensor] + head * k_head_stride_bytes(layer) + slot * g.k_head_bytes();
  }
  const uint8_t* k_head(int32_t layer, int64_t slot, int32_t head) const {
    return const_cast<KvStorage*>(this)->k_head(layer, slot, head);
  }
  uint8_t* v_head(int32_t layer, int64_t slot, int32_t head) {
    const KvLayerGeometry& g = layout_.layers[layer];
    return v_[g.tensor] + head * v_head_stride_bytes(layer) + slot * g.v_head_bytes();
  }
  const uint8_t* k_base(int32_t layer) const { return k_[layout_.layers[layer].tensor]; }
  const uint8_t* v_base(int32_t layer) const { return v_[layout_.layers[layer].tensor]; }
  // Bytes between one KV head's plane and the next in a layer's K (V) region.
  int64_t k_head_stride_bytes(int32_t layer) const { return num_slots(layer) * layout_.layers[layer].k_head_bytes(); }
  int64_t v_head_stride_bytes(int32_t layer) const { return num_slots(layer) * layout_.layers[layer].v_head_bytes(); }

 private:
  int64_t num_slots(int32_t layer) const {
    return static_cast<int64_t>(pool_blocks_[layout_.layers[layer].spec.pool]) * layout_.block_size_tokens;
  }

  KvLayout layout_;
  std::vector<int32_t> pool_blocks_;  // [pools]
  int64_t size_bytes_ = 0;
  void* mapping_ = nullptr;
  std::vector<uint8_t*> k_, v_;  // [num_tensors] region starts
};

}  // namespace slimkv
