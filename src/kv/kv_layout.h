// Geometry of the paged KV cache: tokens per block and, per layer, how one token's K and V rows are stored
// (dtype, heads, head dim, rotation) and so how many bytes they take. Layers may differ, so every size is per layer.
// Must not know: which request owns a block, or how attention reads it.
#pragma once
#include <cstdint>
#include <vector>

#include "core/dtype.h"

namespace slimkv {

struct KvLayerGeometry {
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  KvDtype dtype = KvDtype::F32;
  bool rotate = false;  // rows stored after a fixed randomized Hadamard rotation per head
  int64_t head_bytes() const { return kv_head_record_bytes(dtype, head_dim); }
  int64_t row_bytes() const { return head_bytes() * num_kv_heads; }  // one token's K (or V), all KV heads
  int64_t bytes_per_token() const { return 2 * row_bytes(); }
  bool is_plain_f32() const { return dtype == KvDtype::F32 && !rotate; }
};

struct KvLayout {
  int32_t block_size_tokens = 8;
  std::vector<KvLayerGeometry> layers;  // [num_layers]

  // Every layer stores full K and V rows in `dtype`.
  static KvLayout uniform(int32_t num_layers, int32_t num_kv_heads, int32_t head_dim, int32_t block_size_tokens,
                          KvDtype dtype = KvDtype::F32, bool rotate = false);
  int32_t num_layers() const { return static_cast<int32_t>(layers.size()); }
  int64_t bytes_per_token() const;  // summed over layers
  int64_t bytes_per_block() const { return bytes_per_token() * block_size_tokens; }
  int32_t blocks_for_tokens(int64_t num_tokens) const {
    return static_cast<int32_t>((num_tokens + block_size_tokens - 1) / block_size_tokens);
  }
};

}  // namespace slimkv
