// The KV cache's memory: per layer, one K and one V region of [num_blocks, num_kv_heads, block_size, head_bytes]
// bytes — head-major inside a block, so one head's rows of a block are contiguous (attention walks a head at a time)
// — reserved once at start-up (anonymous mmap: pages are touched only when written).
// Owns: the bytes. Must not know: block ownership, hashing or requests (BlockPool and KvCacheManager do).
#pragma once
#include <cstdint>
#include <vector>

#include "kv/kv_layout.h"

namespace slimkv {

class KvStorage {
 public:
  KvStorage(const KvLayout& layout, int32_t num_blocks);
  ~KvStorage();
  KvStorage(const KvStorage&) = delete;
  KvStorage& operator=(const KvStorage&) = delete;

  const KvLayout& layout() const { return layout_; }
  int32_t num_blocks() const { return num_blocks_; }
  int64_t size_bytes() const { return size_bytes_; }
  // One token's record of one KV head: slot = block_id * block_size + offset in block.
  uint8_t* k_head(int32_t layer, int64_t slot, int32_t head) {
    const KvLayerGeometry& g = layout_.layers[layer];
    return k_[layer] + head_offset(slot, head, g.k_head_bytes(), g.k_row_bytes());
  }
  uint8_t* v_head(int32_t layer, int64_t slot, int32_t head) {
    const KvLayerGeometry& g = layout_.layers[layer];
    return v_[layer] + head_offset(slot, head, g.v_head_bytes(), g.v_row_bytes());
  }
  const uint8_t* k_base(int32_t layer) const { return k_[layer]; }
  const uint8_t* v_base(int32_t layer) const { return v_[layer]; }

 private:
  int64_t head_offset(int64_t slot, int32_t head, int64_t head_bytes, int64_t row_bytes) const {
    const int64_t bs = layout_.block_size_tokens;
    return (slot / bs) * bs * row_bytes + head * bs * head_bytes + (slot % bs) * head_bytes;
  }

  KvLayout layout_;
  int32_t num_blocks_;
  int64_t size_bytes_ = 0;
  void* mapping_ = nullptr;
  std::vector<uint8_t*> k_, v_;  // [num_layers] region starts
};

}  // namespace slimkv
