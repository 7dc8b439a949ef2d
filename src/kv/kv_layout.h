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
  int32_t head_dim = 0;      // the model's
  int32_t k_dim = 0;         // values stored per head and token for keys: head_dim, or a low-rank latent size
  int32_t v_dim = 0;         // ... for values
  KvDtype dtype = KvDtype::F32;
  bool rotate = false;       // rows stored after a fixed randomized Hadamard rotation per head
  int64_t k_head_bytes() const { return kv_head_record_bytes(dtype, k_dim); }
  int64_t v_head_bytes() const { return kv_head_record_bytes(dtype, v_dim); }
  int64_t k_row_bytes() const { return k_head_bytes() * num_kv_heads; }  // one token's keys, all KV heads
  int64_t v_row_bytes() const { return v_head_bytes() * num_kv_heads; }
  int64_t bytes_per_token() const { return k_row_bytes() + v_row_bytes(); }
  bool low_rank() const { return k_dim != head_dim || v_dim != head_dim; }
  bool is_plain_f32() const { return dtype == KvDtype::F32 && !rotate && !low_rank(); }
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
