// Geometry of the paged KV cache: tokens per block and, per layer, the floats one token's K and V rows take.
// Layers may differ (issue C stores low-rank / quantized rows), so every size is per layer.
// Must not know: which request owns a block, or how attention reads it.
#pragma once
#include <cstdint>
#include <vector>


namespace slimkv {

struct KvLayerGeometry {
  int32_t k_row_floats = 0;  // one token's keys, all KV heads: [num_kv_heads * head_dim]
  int32_t v_row_floats = 0;  // one token's values
  int64_t bytes_per_token() const { return static_cast<int64_t>(k_row_floats + v_row_floats) * sizeof(float); }
};

struct KvLayout {
  int32_t block_size_tokens = 8;
  std::vector<KvLayerGeometry> layers;  // [num_layers]

  // Every layer stores full K and V rows of row_floats (= num_kv_heads * head_dim) floats per token.
  static KvLayout uniform(int32_t num_layers, int32_t row_floats, int32_t block_size_tokens);
  int32_t num_layers() const { return static_cast<int32_t>(layers.size()); }
  int64_t bytes_per_token() const;  // summed over layers
  int64_t bytes_per_block() const { return bytes_per_token() * block_size_tokens; }
  int32_t blocks_for_tokens(int64_t num_tokens) const {
    return static_cast<int32_t>((num_tokens + block_size_tokens - 1) / block_size_tokens);
  }
};

}  // namespace slimkv
