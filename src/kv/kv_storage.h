// The KV cache's memory: per layer, one K and one V region of [num_blocks, block_size, row_bytes] bytes,
// reserved once at start-up (anonymous mmap: pages are touched only when written).
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
  // Row of one token: slot = block_id * block_size + offset in block.
  uint8_t* k_row(int32_t layer, int64_t slot) { return k_[layer] + slot * layout_.layers[layer].k_row_bytes(); }
  uint8_t* v_row(int32_t layer, int64_t slot) { return v_[layer] + slot * layout_.layers[layer].v_row_bytes(); }
  const uint8_t* k_base(int32_t layer) const { return k_[layer]; }
  const uint8_t* v_base(int32_t layer) const { return v_[layer]; }

 private:
  KvLayout layout_;
  int32_t num_blocks_;
  int64_t size_bytes_ = 0;
  void* mapping_ = nullptr;
  std::vector<uint8_t*> k_, v_;  // [num_layers] region starts
};

}  // namespace slimkv
